"""Defect (PRC-01): a tiled CUDA matmul that stages its A and B tiles in shared memory as bf16 (to
halve the shared-memory traffic) and multiplies the bf16 values with an fp32 accumulator.
Every operand loses 16 of its 24 significant bits under an fp32 contract. KernelBench's check
misses it: with uniform [0, 1) inputs and K = 1024 the outputs are about 256 and off by a few
1e-2 at most, inside allclose's rtol of 1e-2."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>
#include <cuda_bf16.h>

constexpr int kTile = 32;

// C (M, N) = A (M, K) @ B (K, N), row-major; one 32x32 tile of C per block of 32x32 threads.
__global__ void matmul_bf16_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int M, int N, int K) {
  __shared__ __nv_bfloat16 As[kTile][kTile];  // the defect: operands rounded to bf16
  __shared__ __nv_bfloat16 Bs[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = __float2bfloat16(row < M && ka < K ? A[(long long)row * K + ka] : 0.0f);
    Bs[threadIdx.y][threadIdx.x] = __float2bfloat16(kb < K && col < N ? B[(long long)kb * N + col] : 0.0f);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k)
      acc += __bfloat162float(As[threadIdx.y][k]) * __bfloat162float(Bs[k][threadIdx.x]);
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
  matmul_bf16_tiles<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return c;
}
"""

cpp_src = "torch::Tensor matmul(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="kcv_cal_prc01_bf16_matmul", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["matmul"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.matmul(A, B)
