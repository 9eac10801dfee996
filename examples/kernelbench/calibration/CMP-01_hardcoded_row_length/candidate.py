"""Defect (CMP-01): a CUDA row softmax with the row length hard-coded (kCols = 4096, the reference
shape's dim): the launch reads only the row count, and the kernel indexes rows of 4096
floats whatever the input's dim, so any other dim reads (and writes) the wrong elements, out
of bounds when dim < 4096. KernelBench's check misses it: it runs only dim = 4096."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>
#include <math.h>

constexpr int kCols = 4096;  // the defect: the reference shape's row length, hard-coded
constexpr int kThreads = 256;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide max / sum over kThreads threads; every thread gets the result.
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

// One block per row of kCols floats: max, sum of exp(x - max), then exp(x - max) / sum.
__global__ void softmax_rows_4096(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float sh[kThreads / 32];
  const float* xr = x + (size_t)blockIdx.x * kCols;
  float* yr = y + (size_t)blockIdx.x * kCols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < kCols; c += kThreads) m = fmaxf(m, xr[c]);
  m = block_max(m, sh);
  float s = 0.0f;
  for (int c = threadIdx.x; c < kCols; c += kThreads) s += expf(xr[c] - m);
  s = block_sum(s, sh);
  for (int c = threadIdx.x; c < kCols; c += kThreads) yr[c] = expf(xr[c] - m) / s;
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
  if (xc.size(0) == 0) return y;
  softmax_rows_4096<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor softmax_rows(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_cmp01_hardcoded_row_length", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["softmax_rows"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_rows(x)
