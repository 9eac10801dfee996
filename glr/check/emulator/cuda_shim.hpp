// File: glr/check/emulator/cuda_shim.hpp
// Just enough of the CUDA execution model to compile the GLR stage kernels (glr/tiles,
// glr/kernels/stage_*.cuh) as host C++ and run them on the CPU: threadIdx / blockIdx (per host
// thread), blockDim, __syncthreads() as a std::barrier over the emulated CTA's threads (and
// __syncwarp() as the same barrier, for one-warp CTAs), and
// __launch_bounds__ as nothing. The CUDA headers already make __global__, __device__ and
// __shared__ empty for a host compiler and give bf16 host conversions. Include this before any
// kernel header; emulated_device.cpp defines the shared-memory buffer and runs the grids.
// It defines KCV_GLR_HOST_EMULATION, which selects the host versions of the tensor-core atoms of
// glr/arch (a host thread there plays a whole warp: glr/dev/host_runner.cpp), and
// lanes_per_host_thread: how many consecutive CUDA threads one host thread plays in the CTA-wide
// loops of glr/tiles/block_loops.cuh (1 for glr_emulate, 32 for the warp-granular runner).
#pragma once

#define KCV_GLR_HOST_EMULATION 1

#ifdef __CUDACC__
#error "the emulator compiles the kernel sources as host C++; do not build it with nvcc"
#endif

#define __launch_bounds__(...)

#include <cuda_bf16.h>
#include <vector_types.h>

#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;

namespace kcv::glr::check::emulator {
/// The barrier of the CTA being emulated; null when one host thread plays the whole CTA.
inline std::barrier<>* cta_barrier = nullptr;
/// Consecutive CUDA threads played by one host thread (threadIdx.x is the first of them).
inline int lanes_per_host_thread = 1;

/// A barrier whose count comes with each wait, as bar.sync's: the calls of one round must agree
/// on it (the kernel's subset of warps); it releases them when that many host threads arrived.
class CountedBarrier {
 public:
  void arrive_and_wait(int expected) {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t round = round_;
    if (++arrived_ == expected) {
      arrived_ = 0;
      ++round_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return round_ != round; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int arrived_ = 0;
  std::uint64_t round_ = 0;
};
/// PTX's 16 named barriers (id 0 is __syncthreads()'s; the emulation keeps that one apart).
inline CountedBarrier named_barriers[16];
}  // namespace kcv::glr::check::emulator

inline void __syncthreads() {
  if (kcv::glr::check::emulator::cta_barrier != nullptr)
    kcv::glr::check::emulator::cta_barrier->arrive_and_wait();
}

// A warp barrier as the CTA barrier: right for kernels whose CTA is one warp (the decode kernel).
inline void __syncwarp(unsigned = 0xffffffffu) { __syncthreads(); }
