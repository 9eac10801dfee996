// File: glr/check/device_buffer.hpp
// DeviceBuffer: cudaMalloc'ed bytes for the GPU runners (device_run.cpp, decode_device.cpp,
// device_run_mma.cpp), optionally placed a few bytes past the allocation's start
// (HostInputs::device_offset), with upload, 0xFF poisoning (NaN in bf16 and fp32) and download;
// freed on destruction. Every CUDA call returns a Status naming the call and file:line.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::check {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (base_ != nullptr) cudaFree(base_);
  }

  /// `offset` bytes past the allocation's start (a multiple of 16; see HostInputs).
  Status allocate(std::size_t bytes, std::size_t offset = 0) {
    bytes_ = bytes;
    if (bytes == 0) return {};
    KCV_GLR_CUDA(cudaMalloc(&base_, bytes + offset));
    ptr_ = static_cast<std::uint8_t*>(base_) + offset;
    return {};
  }
  Status upload(const void* host, std::size_t bytes, std::size_t offset) {
    KCV_GLR_TRY(allocate(bytes, offset));
    if (bytes > 0) KCV_GLR_CUDA(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
    return {};
  }
  template <typename T>
  Status upload(const std::vector<T>& host, std::size_t offset) {
    return upload(host.data(), host.size() * sizeof(T), offset);
  }
  Status poison(cudaStream_t s) {
    if (bytes_ > 0) KCV_GLR_CUDA(cudaMemsetAsync(ptr_, 0xff, bytes_, s));
    return {};
  }
  Status download(std::vector<std::uint8_t>& out) const {
    out.resize(bytes_);
    if (bytes_ > 0) KCV_GLR_CUDA(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return {};
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* base_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace kcv::glr::check
