"""Correct CUDA affine map x * scale + shift: a contiguous copy of the input first (any view
works), a grid-stride loop with the bounds check i < n, so no thread reads or writes past the
end at any length."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                              float scale, float shift) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = x[i] * scale + shift;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor affine(torch::Tensor x, double scale, double shift) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "affine: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const long long n = xc.numel();
  if (n == 0) return y;
  const unsigned blocks = (unsigned)std::min<long long>((n + 255) / 256, 4096);
  affine_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)scale, (float)shift);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor affine(torch::Tensor x, double scale, double shift);"

_ext = load_inline(name="kcv_cal_ok_elementwise_cuda", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["affine"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        return _ext.affine(x, self.scale, self.shift)
