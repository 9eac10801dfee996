"""Defect (RES-01): a CUDA square kernel launched on ceil(n / 256) blocks of 256 threads with no
bounds check: every thread loads x[i] and stores y[i], so when n is not a multiple of 256
the last block reads past the input and writes past the output. KernelBench's check misses
it: at the reference shape n = 16 * 4096 is a multiple of 256, and even at other shapes the
stray stores usually land in the caching allocator's rounding slack."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__global__ void square_kernel(const float* __restrict__ x, float* __restrict__ y) {
  const long long i = blockIdx.x * (long long)kThreads + threadIdx.x;
  const float v = x[i];  // the defect: no `if (i < n)`, the last block runs past the end
  y[i] = v * v;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor square(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "square: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const long long n = xc.numel();
  if (n == 0) return y;
  square_kernel<<<(unsigned)((n + kThreads - 1) / kThreads), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor square(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_res01_unmasked_tail_store", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["square"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.square(x)
