// File: glr/tiles/block_loops.cuh
// The one way work is spread over the threads of a CTA in the GLR stages: element e of an index
// space goes to thread e % blockDim.x, always. Every output element is therefore computed by one
// thread, with its own fixed summation order, on every run: the stages are deterministic without
// any atomics. Row-major order puts consecutive columns on consecutive threads, which makes
// global loads of a row coalesced and column reads of a padded tile conflict-free.
// No __syncthreads() inside: callers place the barriers between phases.
// In the host emulation a host thread may play several consecutive threads (cuda_shim.hpp's
// lanes_per_host_thread, 32 when it plays a warp); it then does each of their elements, so the
// element → thread map stays the device's.
#pragma once

namespace kcv::glr::gpu::detail {

/// CUDA threads the calling thread plays: 1 on the device.
__device__ __forceinline__ int threads_played() {
#if defined(KCV_GLR_HOST_EMULATION)
  return check::emulator::lanes_per_host_thread;
#else
  return 1;
#endif
}

/// f(i) for i in [0, n).
template <typename F>
__device__ __forceinline__ void for_each_1d(int n, F&& f) {
  for (int l = 0; l < threads_played(); ++l)
    for (int idx = static_cast<int>(threadIdx.x) + l; idx < n; idx += static_cast<int>(blockDim.x))
      f(idx);
}

/// f(i, j) for (i, j) in [0, rows) × [0, cols), row-major.
template <typename F>
__device__ __forceinline__ void for_each_2d(int rows, int cols, F&& f) {
  const int n = rows * cols;
  for (int l = 0; l < threads_played(); ++l)
    for (int idx = static_cast<int>(threadIdx.x) + l; idx < n; idx += static_cast<int>(blockDim.x))
      f(idx / cols, idx % cols);
}

}  // namespace kcv::glr::gpu::detail
