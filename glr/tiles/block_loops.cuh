// File: glr/tiles/block_loops.cuh
// The one way work is spread over the threads of a CTA in the GLR stages: element e of an index
// space goes to thread e % blockDim.x, always. Every output element is therefore computed by one
// thread, with its own fixed summation order, on every run: the stages are deterministic without
// any atomics. Row-major order puts consecutive columns on consecutive threads, which makes
// global loads of a row coalesced and column reads of a padded tile conflict-free.
// No __syncthreads() inside: callers place the barriers between phases.
#pragma once

namespace kcv::glr::gpu::detail {

/// f(i) for i in [0, n).
template <typename F>
__device__ __forceinline__ void for_each_1d(int n, F&& f) {
  for (int idx = static_cast<int>(threadIdx.x); idx < n; idx += static_cast<int>(blockDim.x))
    f(idx);
}

/// f(i, j) for (i, j) in [0, rows) × [0, cols), row-major.
template <typename F>
__device__ __forceinline__ void for_each_2d(int rows, int cols, F&& f) {
  const int n = rows * cols;
  for (int idx = static_cast<int>(threadIdx.x); idx < n; idx += static_cast<int>(blockDim.x))
    f(idx / cols, idx % cols);
}

}  // namespace kcv::glr::gpu::detail
