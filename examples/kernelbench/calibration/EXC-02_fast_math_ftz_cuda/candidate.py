"""Defect (EXC-02 under every profile but fast-math): a CUDA scale kernel built with
-use_fast_math, which implies --ftz=true: the multiply is mul.ftz.f32, so subnormal inputs
read as zero and subnormal results are flushed to zero. Under strict, cuda-default,
triton-default and pytorch-eager subnormals must be kept, so x * 2^-130 inputs fail; under
fast-math flushing is the declared semantics and the same kernel passes. KernelBench's check
misses it: torch.randn never draws a subnormal."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3", "-use_fast_math"]

cuda_src = r"""
#include <cuda_runtime.h>

// y = x * scale; under -use_fast_math the multiply flushes subnormal operands and results.
__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, float scale) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = x[i] * scale;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor scale(torch::Tensor x, double s) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "scale: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const long long n = xc.numel();
  if (n == 0) return y;
  const unsigned blocks = (unsigned)std::min<long long>((n + 255) / 256, 4096);
  scale_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)s);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor scale(torch::Tensor x, double s);"

_ext = load_inline(name="kcv_cal_exc02_fast_math_ftz", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["scale"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _ext.scale(x, self.scale)
