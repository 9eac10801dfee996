// File: glr/check/emulator/emulated_decode.cpp
// See emulated_decode.hpp. Shared memory (3·K floats) is poisoned with NaN before every CTA, as
// the chunk kernels' emulation does, so a read before the staging write shows up.
#include "glr/check/emulator/cuda_shim.hpp"
// the shim first: it makes the kernel header compile as host C++
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "glr/check/emulator/emulated_decode.hpp"
#include "glr/kernels/decode_kernel.cuh"

namespace kcv::glr::check {

void run_decode_emulated(const gpu::detail::DecodeParams& p) {
  constexpr int kLanes = gpu::detail::kDecodeWarp;
  std::vector<float> smem(static_cast<std::size_t>(3 * p.key_dim));
  blockDim = dim3(kLanes);
  for (std::int64_t block = 0; block < p.sequences * p.v_heads; ++block) {
    std::fill(smem.begin(), smem.end(), std::numeric_limits<float>::quiet_NaN());
    std::barrier<> barrier(kLanes);
    emulator::cta_barrier = &barrier;
    std::vector<std::thread> lanes;
    for (unsigned lane = 0; lane < static_cast<unsigned>(kLanes); ++lane)
      lanes.emplace_back([&, lane] {
        threadIdx = uint3{lane, 0, 0};
        gpu::detail::decode_block(p, block, smem.data());
      });
    for (std::thread& t : lanes) t.join();
    emulator::cta_barrier = nullptr;
  }
}

Expected<DecodeResult> run_decode_on_host(const DecodeCall& call) {
  DecodeResult r;
  auto p = host_params(call, r);
  if (!p) return p.error();
  run_decode_emulated(*p);
  return r;
}

}  // namespace kcv::glr::check
