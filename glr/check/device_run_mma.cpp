// File: glr/check/device_run_mma.cpp
// The GPU Runner of device_run_mma.hpp: DeviceBuffer (device_buffer.hpp) as the Memory of
// mma_call.hpp, the launches by glr/dev/chunked_mma_{forward,backward}.cu on the default stream.
#include "check/device_run_mma.hpp"

#include <cuda_runtime_api.h>

#include "check/device_buffer.hpp"
#include "check/mma_call.hpp"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::check {
namespace {

struct DeviceMemory {
  using Buffer = DeviceBuffer;
  std::size_t offset = 0;  ///< HostInputs::device_offset: ORD-02's shifted addresses
  int multiprocessors = 0;
  cudaStream_t stream = nullptr;

  Status allocate(Buffer& b, std::size_t bytes) { return b.allocate(bytes, offset); }
  template <typename T>
  Status upload(Buffer& b, const std::vector<T>& host) {
    return b.upload(host, offset);
  }
  Status poison(Buffer& b) { return b.poison(stream); }
  Status download(const Buffer& b, std::vector<std::uint8_t>& out) { return b.download(out); }
  void* get(const Buffer& b) { return b.get(); }
  Status forward(Member m, const dev::MmaForwardParams& p) {
    return dev::mma_forward(m, p, dev::default_value_tile(p, multiprocessors), stream);
  }
  Status backward(Member m, const dev::MmaBackwardParams& p) {
    return dev::mma_backward(m, p, dev::default_value_tile(p.fwd, multiprocessors), stream);
  }
  Status synchronize() {
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      return gpu::detail::cuda_error(e, "cudaDeviceSynchronize after forward + backward", __FILE__,
                                     __LINE__);
    return {};
  }
};

}  // namespace

Expected<DeviceResults> run_mma_device(const HostInputs& in) {
  DeviceMemory mem;
  mem.offset = in.device_offset;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return gpu::detail::cuda_error(e, "cudaGetDevice", __FILE__, __LINE__);
  if (const cudaError_t e =
          cudaDeviceGetAttribute(&mem.multiprocessors, cudaDevAttrMultiProcessorCount, device);
      e != cudaSuccess)
    return gpu::detail::cuda_error(e, "cudaDeviceGetAttribute(multiprocessors)", __FILE__,
                                   __LINE__);
  return run_mma_call(in, mem);
}

}  // namespace kcv::glr::check
