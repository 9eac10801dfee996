"""Correct CUDA matmul: 32x32 fp32 tiles of A and B staged in shared memory (contiguous copies
first), zero-padded past the matrix edges, one output element per thread, every product added
into the fp32 sum with Kahan compensation (dropped once the sum is Inf or NaN): a plain
sequential sum over K = 1024 errs several times more than eager's blocked GEMM, and a
per-tile partial still rounds each add at a dominant product's magnitude (README.md,
"Findings"); bounds-checked store."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kTile = 32;

// C (M, N) = A (M, K) @ B (K, N), row-major; one 32x32 tile of C per block of 32x32 threads.
__global__ void matmul_tiles(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f, comp = 0.0f;  // comp: Kahan compensation of acc
  for (int k0 = 0; k0 < K; k0 += kTile) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[(long long)row * K + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[(long long)kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) {
      const float y = As[threadIdx.y][k] * Bs[k][threadIdx.x] - comp;
      const float t = acc + y;
      comp = isfinite(t) ? (t - acc) - y : 0.0f;  // no compensation past Inf/NaN
      acc = t;
    }
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = acc;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor matmul(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0) &&
              a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
              "matmul: float32 CUDA matrices (M, K) and (K, N) expected");
  auto ac = a.contiguous(), bc = b.contiguous();
  const int M = (int)ac.size(0), K = (int)ac.size(1), N = (int)bc.size(1);
  auto c = torch::empty({M, N}, ac.options());
  if (M == 0 || N == 0) return c;
  dim3 block(kTile, kTile), grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
  matmul_tiles<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return c;
}
"""

cpp_src = "torch::Tensor matmul(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="kcv_cal_ok_matmul_cuda", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["matmul"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.matmul(A, B)
