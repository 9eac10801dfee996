"""Defect (EXC-01): a CUDA row sum that saturates its result to [-FLT_MAX, FLT_MAX] "to avoid
infinities downstream". A row holding +Inf sums to FLT_MAX instead of +Inf, and a NaN row to
-FLT_MAX (fmaxf(NaN, -FLT_MAX) drops the NaN), under every profile, since the reference has no
max or clamp whose NaN semantics a profile could relax. KernelBench's check misses it:
torch.randn rows sum to about +-64, far inside the clamp."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>
#include <float.h>

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

__global__ void row_sum_saturating(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += xr[c];
  s = block_sum(s, sh);
  // the defect: +-Inf become +-FLT_MAX, and NaN becomes -FLT_MAX
  if (threadIdx.x == 0) out[blockIdx.x] = fminf(fmaxf(s, -FLT_MAX), FLT_MAX);
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
  row_sum_saturating<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), out.data_ptr<float>(), (int)xc.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

cpp_src = "torch::Tensor row_sum(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_exc01_saturating_sum", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["row_sum"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.row_sum(x)
