// File: glr/dev/host_runner.cpp
// The warp-granular CPU runner of host_runner.hpp. Host thread w plays warp w of the CTA
// (threadIdx.x = 32·w, 32 lanes per host thread in the CTA-wide loops), so register fragments are
// ordinary locals of that host thread, as they are of a warp on the device.
#include "check/emulator/cuda_shim.hpp"  // first: the CUDA execution model for the kernels
// (the kernel header comes after the shim)
#include <cstring>
#include <thread>
#include <vector>

#include "glr/arch/wgmma.cuh"
#include "glr/dev/chunked_mma_backward.cuh"
#include "glr/dev/host_runner.hpp"

namespace kcv::glr::arch {
std::byte* emulated_shared_memory = nullptr;
}  // namespace kcv::glr::arch

namespace kcv::glr::dev {
namespace {

constexpr std::size_t kSharedBytes = 227 * 1024;
alignas(1024) std::byte shared_buffer[kSharedBytes];  // 1024: the sw128 layout's swizzle period

template <typename Body>
void run_grid(dim3 grid, std::size_t shared_bytes, int threads, Body&& body) {
  const int warp_count = threads / arch::kWarpSize;
  namespace emu = check::emulator;
  blockDim = dim3(static_cast<unsigned>(threads));
  emu::lanes_per_host_thread = arch::kWarpSize;
  arch::emulated_shared_memory = shared_buffer;
  std::barrier<> barrier(warp_count);
  emu::cta_barrier = &barrier;
  std::vector<std::thread> warps;
  for (int w = 0; w < warp_count; ++w)
    warps.emplace_back([&, w] {
      threadIdx = uint3{static_cast<unsigned>(w * arch::kWarpSize), 0, 0};
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x) {
            if (w == 0) std::memset(shared_buffer, 0xff, shared_bytes);
            barrier.arrive_and_wait();
            blockIdx = uint3{x, y, z};
            body();
            arch::emulated_copies::drop_pending();
            arch::emulated_wgmma::drop_pending();
            barrier.arrive_and_wait();
          }
    });
  for (std::thread& t : warps) t.join();
  emu::cta_barrier = nullptr;
  emu::lanes_per_host_thread = 1;
}

struct HostLaunch {
  template <typename Params>
  Status operator()(const char* stage, void (*kernel)(Params), dim3 grid, std::size_t shared_bytes,
                    const Params& p, int threads = kMmaThreads) const {
    if (shared_bytes > kSharedBytes)
      return make_error(ErrorCode::kInternal, "shared storage over the sm_90 limit", stage);
    run_grid(grid, shared_bytes, threads, [&] { kernel(p); });
    return {};
  }
};

}  // namespace

Status emulate_mma_forward(Member member, const MmaForwardParams& p, int value_tile) {
  if (value_tile != 32 && value_tile != 64)
    return make_error(ErrorCode::kInvalidArgument, "value_tile must be 32 or 64", "value_tile");
  return for_mma_member(member, [&]<GateKind kGate, bool kDelta>() {
    if (value_tile == 32) return forward_sequence<kGate, kDelta, 32>(p, HostLaunch{});
    return forward_sequence<kGate, kDelta, 64>(p, HostLaunch{});
  });
}

}  // namespace kcv::glr::dev

namespace kcv::glr::dev {

Status emulate_mma_backward(Member member, const MmaBackwardParams& p, int value_tile,
                            ScanTile scan_tile) {
  if (value_tile != 32 && value_tile != 64)
    return make_error(ErrorCode::kInvalidArgument, "value_tile must be 32 or 64", "value_tile");
  return for_mma_backward_member(member, [&]<GateKind kGate, bool kDelta>() {
    if (scan_tile == ScanTile::kValueTile) {
      if (value_tile == 32) return backward_sequence<kGate, kDelta, 32, 32>(p, HostLaunch{});
      return backward_sequence<kGate, kDelta, 64, 64>(p, HostLaunch{});
    }
    if (value_tile == 32) return backward_sequence<kGate, kDelta, 32>(p, HostLaunch{});
    return backward_sequence<kGate, kDelta, 64>(p, HostLaunch{});
  });
}

}  // namespace kcv::glr::dev
