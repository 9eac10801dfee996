// File: glr/check/emulator/emulated_mma.cpp
// The CPU Runner of emulated_mma.hpp: host memory as the Memory of mma_call.hpp, the launches by
// glr/dev/host_runner.cpp. Buffers are 256-byte aligned (the kernels need 16).
#include "check/emulator/emulated_mma.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "check/mma_call.hpp"
#include "glr/dev/host_runner.hpp"

namespace kcv::glr::check {
namespace {

constexpr int kValueTile = 32;

struct HostBuffer {
  std::unique_ptr<std::byte, decltype(&std::free)> mem{nullptr, &std::free};
  std::size_t bytes = 0;
};

struct HostMemory {
  using Buffer = HostBuffer;

  Status allocate(Buffer& b, std::size_t bytes) {
    b.bytes = bytes;
    if (bytes == 0) return {};
    b.mem.reset(static_cast<std::byte*>(std::aligned_alloc(256, (bytes + 255) / 256 * 256)));
    if (b.mem == nullptr) throw std::bad_alloc();
    return {};
  }
  template <typename T>
  Status upload(Buffer& b, const std::vector<T>& host) {
    if (Status st = allocate(b, host.size() * sizeof(T)); !st) return st;
    if (b.bytes > 0) std::memcpy(b.mem.get(), host.data(), b.bytes);
    return {};
  }
  Status poison(Buffer& b) {
    if (b.bytes > 0) std::memset(b.mem.get(), 0xff, b.bytes);
    return {};
  }
  Status download(const Buffer& b, std::vector<std::uint8_t>& out) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(b.mem.get());
    out.assign(p, p + b.bytes);
    return {};
  }
  void* get(const Buffer& b) { return b.mem.get(); }
  Status forward(Member m, const dev::MmaForwardParams& p) {
    return dev::emulate_mma_forward(m, p, kValueTile);
  }
  Status backward(Member m, const dev::MmaBackwardParams& p) {
    return dev::emulate_mma_backward(m, p, kValueTile);
  }
  Status synchronize() { return {}; }
};

}  // namespace

Expected<DeviceResults> run_mma_emulated(const HostInputs& in) {
  HostMemory mem;
  return run_mma_call(in, mem);
}

}  // namespace kcv::glr::check
