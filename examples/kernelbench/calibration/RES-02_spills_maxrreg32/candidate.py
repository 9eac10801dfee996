"""Defect (RES-02): a CUDA matmul in which every thread keeps an 8x8 tile of C (64 fp32
accumulators) in registers, built with -maxrregcount=32: ptxas cannot fit the tile and
spills it to local memory, while the contract declares no spills allowed
("budgets": {"spill_bytes": 0}). Numerically it is a correct fp32 matmul. KernelBench's
check misses it: it compares values only and never reads ptxas' resource usage."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3", "-maxrregcount=32"]  # the defect: 64 accumulators cannot fit in 32 registers

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kBM = 64, kBN = 64, kBK = 16, kTM = 8, kTN = 8;  // 8 x 8 = 64 threads a block

// C (M, N) = A (M, K) @ B (K, N), row-major. A block computes a 64x64 tile of C, each of its
// 64 threads an 8x8 sub-tile kept in registers.
__global__ void matmul_reg_tile(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tr = threadIdx.x / (kBN / kTN), tc = threadIdx.x % (kBN / kTN);
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kBK) {
    for (int e = threadIdx.x; e < kBK * kBM; e += blockDim.x) {
      const int k = e / kBM, m = e % kBM;
      const int gr = row0 + m, gk = k0 + k;
      As[k][m] = (gr < M && gk < K) ? A[(long long)gr * K + gk] : 0.0f;
    }
    for (int e = threadIdx.x; e < kBK * kBN; e += blockDim.x) {
      const int k = e / kBN, n = e % kBN;
      const int gk = k0 + k, gc = col0 + n;
      Bs[k][n] = (gk < K && gc < N) ? B[(long long)gk * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[kTM], b[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = As[k][tr * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b[j] = Bs[k][tc * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < M && c < N) C[(long long)r * N + c] = acc[i][j];
    }
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
  if (K == 0) return c.zero_();
  dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
  matmul_reg_tile<<<grid, (kBM / kTM) * (kBN / kTN), 0, at::cuda::getCurrentCUDAStream()>>>(
      ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return c;
}
"""

cpp_src = "torch::Tensor matmul(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="kcv_cal_res02_spills_maxrreg32", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["matmul"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.matmul(A, B)
