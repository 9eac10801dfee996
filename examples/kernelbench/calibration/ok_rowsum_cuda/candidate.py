"""Correct CUDA row sum: one block of 256 threads per row (contiguous copy first), four
independent fp32 accumulators per thread over a strided loop, then a warp-shuffle block
reduction. Any row length; every output written by thread 0 of its block."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
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

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, long long cols) {
  __shared__ float sh[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  long long c = threadIdx.x;
  for (; c + 3 * kThreads < cols; c += 4 * kThreads) {
    a0 += xr[c];
    a1 += xr[c + kThreads];
    a2 += xr[c + 2 * kThreads];
    a3 += xr[c + 3 * kThreads];
  }
  for (; c < cols; c += kThreads) a0 += xr[c];
  const float s = block_sum((a0 + a1) + (a2 + a3), sh);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor row_sum(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "row_sum: a 2-D float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto out = torch::empty({xc.size(0)}, xc.options());
  if (xc.size(0) == 0) return out;
  row_sum_kernel<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), out.data_ptr<float>(), xc.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

cpp_src = "torch::Tensor row_sum(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_ok_rowsum_cuda", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["row_sum"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.row_sum(x)
