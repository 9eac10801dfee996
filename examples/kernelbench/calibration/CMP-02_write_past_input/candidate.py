"""Defect (CMP-02): a CUDA affine kernel that zero-fills its input's tail up to a multiple of 4
floats, so that a float4 loop may read whole groups, with an inclusive bound: it writes x[n],
one float past the end of the input, even when n is a multiple of 4 (at the reference shape,
n = 10000). KernelBench's check misses it: the values are right, and the stray float lands in
the caching allocator's rounding slack (blocks are multiples of 512 bytes; the input is 40000),
which no tensor owns."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

// Zero-fills x[n .. round_up(n, 4)) so that the float4 loop may read the last group whole.
// The defect: the bound is inclusive, so x[round_up(n, 4)] is written too, and when n is
// already a multiple of 4 that is x[n], one float past the end of the input.
__global__ void zero_tail(float* x, long long n) {
  const long long end = (n + 3) / 4 * 4;
  for (long long k = n + threadIdx.x; k <= end; k += blockDim.x) x[k] = 0.0f;
}

// y = x * scale + shift, four elements per thread (x 16-byte aligned).
__global__ void affine_vec4(const float4* __restrict__ x, float* __restrict__ y, long long n,
                            float scale, float shift) {
  const long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long i = 4 * g;
  if (i >= n) return;
  const float4 v = x[g];
  y[i] = v.x * scale + shift;
  if (i + 1 < n) y[i + 1] = v.y * scale + shift;
  if (i + 2 < n) y[i + 2] = v.z * scale + shift;
  if (i + 3 < n) y[i + 3] = v.w * scale + shift;
}

// The same, one element per thread, for inputs that are not 16-byte aligned.
__global__ void affine_scalar(const float* __restrict__ x, float* __restrict__ y, long long n,
                              float scale, float shift) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = x[i] * scale + shift;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

torch::Tensor affine(torch::Tensor x, double scale, double shift) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "affine: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const long long n = xc.numel();
  if (n == 0) return y;
  auto stream = at::cuda::getCurrentCUDAStream();
  float* xp = xc.data_ptr<float>();
  if (reinterpret_cast<std::uintptr_t>(xp) % 16 == 0) {
    zero_tail<<<1, 32, 0, stream>>>(xp, n);
    const long long groups = (n + 3) / 4;
    affine_vec4<<<(unsigned)((groups + 255) / 256), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(xp), y.data_ptr<float>(), n, (float)scale, (float)shift);
  } else {
    affine_scalar<<<(unsigned)std::min<long long>((n + 255) / 256, 4096), 256, 0, stream>>>(
        xp, y.data_ptr<float>(), n, (float)scale, (float)shift);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor affine(torch::Tensor x, double scale, double shift);"

_ext = load_inline(name="kcv_cal_cmp02_write_past_input", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["affine"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        return _ext.affine(x, self.scale, self.shift)
