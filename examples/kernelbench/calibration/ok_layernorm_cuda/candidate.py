"""Correct CUDA layer norm (Welford on shifted data): one block of 256 threads per row
(contiguous copy first); each thread runs Welford's update over x - s for its columns (s the
row's first element, so a mean that is large against the spread costs no accuracy), the block
merges the (count, mean, M2) triples with Chan's formula, mean = s + mean(x - s) and
var = M2 / n; then (x - mean) * (1 / sqrt(var + eps)) * w + b with IEEE sqrt and division.
Any row length."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kThreads = 256;

struct Welford {
  float n, mean, m2;
};

__device__ __forceinline__ Welford merge(Welford a, Welford b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  const float n = a.n + b.n;
  const float delta = b.mean - a.mean;
  const float wb = b.n / n;
  Welford r;
  r.n = n;
  r.mean = a.mean + delta * wb;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
  return r;
}

__device__ __forceinline__ Welford warp_merge(Welford w) {
  for (int o = 16; o > 0; o >>= 1) {
    Welford other;
    other.n = __shfl_xor_sync(0xffffffffu, w.n, o);
    other.mean = __shfl_xor_sync(0xffffffffu, w.mean, o);
    other.m2 = __shfl_xor_sync(0xffffffffu, w.m2, o);
    w = merge(w, other);
  }
  return w;
}

__global__ void layer_norm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                const float* __restrict__ b, float* __restrict__ y, int cols, float eps) {
  __shared__ float sn[kThreads / 32], smean[kThreads / 32], sm2[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  const float shift = xr[0];
  Welford acc = {0.0f, 0.0f, 0.0f};
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float v = xr[c] - shift;
    acc.n += 1.0f;
    const float d = v - acc.mean;
    acc.mean += d / acc.n;
    acc.m2 += d * (v - acc.mean);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  acc = warp_merge(acc);
  if (lane == 0) {
    sn[warp] = acc.n;
    smean[warp] = acc.mean;
    sm2[warp] = acc.m2;
  }
  __syncthreads();
  Welford tot = {0.0f, 0.0f, 0.0f};
  if (lane < kThreads / 32) tot = Welford{sn[lane], smean[lane], sm2[lane]};
  tot = warp_merge(tot);
  // lane 0 of every warp merged the same triples in the same order: one mean, one rstd a row
  const float mean = shift + __shfl_sync(0xffffffffu, tot.mean, 0);
  const float m2 = __shfl_sync(0xffffffffu, tot.m2, 0);
  const float rstd = 1.0f / sqrtf(m2 / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor layer_norm(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "layer_norm: a 2-D float32 CUDA tensor expected");
  auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
  TORCH_CHECK(wc.numel() == xc.size(1) && bc.numel() == xc.size(1), "layer_norm: weight/bias size");
  auto y = torch::empty_like(xc);
  if (xc.size(0) == 0 || xc.size(1) == 0) return y;
  layer_norm_rows<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
      (int)xc.size(1), (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor layer_norm(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

_ext = load_inline(name="kcv_cal_ok_layernorm_cuda", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["layer_norm"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.bias = nn.Parameter(0.1 * torch.randn(dim))
        self.eps = 1e-5

    def forward(self, x):
        return _ext.layer_norm(x, self.weight, self.bias, self.eps)
