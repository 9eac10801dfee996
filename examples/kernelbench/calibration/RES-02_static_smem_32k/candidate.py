"""Defect (RES-02): a CUDA row softmax that caches its row in a static shared array of 8192
floats, 32 KiB, while its contract declares a shared-memory budget of 16 KiB
("budgets": {"shared_bytes": 16384}, "arch": "sm_90a"). Numerically it is correct (rows
longer than 8192 take an uncached path). KernelBench's check misses it: it compares values
only and never reads ptxas' resource usage."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>
#include <math.h>

constexpr int kThreads = 256;
constexpr int kCache = 8192;  // the defect: 8192 floats = 32 KiB of static shared memory

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_max(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = warp_max(lane < kThreads / 32 ? sh[lane] : -INFINITY);
  __syncthreads();
  return v;
}

__device__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = warp_sum(lane < kThreads / 32 ? sh[lane] : 0.0f);
  __syncthreads();
  return v;
}

// One block per row. A row of up to kCache floats is read from global memory once, into the
// shared cache; longer rows are read three times instead.
__global__ void softmax_rows_cached(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float cache[kCache];
  __shared__ float sh[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  const bool cached = cols <= kCache;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float v = xr[c];
    if (cached) cache[c] = v;
    m = fmaxf(m, v);
  }
  m = block_max(m, sh);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += expf((cached ? cache[c] : xr[c]) - m);
  s = block_sum(s, sh);
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = expf((cached ? cache[c] : xr[c]) - m) / s;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor softmax_rows(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "softmax_rows: a 2-D float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  if (xc.size(0) == 0 || xc.size(1) == 0) return y;
  softmax_rows_cached<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor softmax_rows(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_res02_static_smem_32k", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["softmax_rows"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_rows(x)
