"""Defect (ORD-01): a CUDA row sum with two paths: rows of up to 8192 columns are summed by one
block each; longer rows are split into 8192-column chunks whose partial sums a second kernel
adds, and that kernel's loop starts at chunk 1 (acc starts at 0, as if it had been set from
chunk 0), so the first 8192 columns of every long row are lost. KernelBench's check misses it:
the reference dim is 4096, on the one-block path."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kThreads = 256;
constexpr int kChunk = 8192;  // columns per block on the split path

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

// Columns [begin, end) of row r summed by one block.
__device__ float sum_range(const float* __restrict__ x, long long r, int cols, long long begin,
                           long long end, float* sh) {
  const float* xr = x + r * cols;
  float s = 0.0f;
  for (long long c = begin + threadIdx.x; c < end; c += kThreads) s += xr[c];
  return block_sum(s, sh);
}

__global__ void row_sum_single(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[kThreads / 32];
  const float s = sum_range(x, blockIdx.x, cols, 0, cols, sh);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// Block (s, r): chunk s of row r into partial[r * nsplit + s].
__global__ void row_sum_partial(const float* __restrict__ x, float* __restrict__ partial, int cols,
                                int nsplit) {
  __shared__ float sh[kThreads / 32];
  const long long begin = (long long)blockIdx.x * kChunk;
  const long long end = begin + kChunk < cols ? begin + kChunk : cols;
  const float s = sum_range(x, blockIdx.y, cols, begin, end, sh);
  if (threadIdx.x == 0) partial[(long long)blockIdx.y * nsplit + blockIdx.x] = s;
}

// The defect: the loop starts at chunk 1, but acc starts at 0 instead of partial[r][0].
__global__ void row_sum_finish(const float* __restrict__ partial, float* __restrict__ out, int rows,
                               int nsplit) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int s = 1; s < nsplit; ++s) acc += partial[(long long)r * nsplit + s];
  out[r] = acc;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor row_sum(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "row_sum: a 2-D float32 CUDA tensor expected");
  auto xc = x.contiguous();
  const int rows = (int)xc.size(0), cols = (int)xc.size(1);
  auto out = torch::empty({rows}, xc.options());
  if (rows == 0) return out;
  auto stream = at::cuda::getCurrentCUDAStream();
  if (cols <= kChunk) {
    row_sum_single<<<rows, kThreads, 0, stream>>>(xc.data_ptr<float>(), out.data_ptr<float>(), cols);
  } else {
    const int nsplit = (cols + kChunk - 1) / kChunk;
    auto partial = torch::empty({(long long)rows * nsplit}, xc.options());
    row_sum_partial<<<dim3(nsplit, rows), kThreads, 0, stream>>>(xc.data_ptr<float>(),
                                                                  partial.data_ptr<float>(), cols, nsplit);
    row_sum_finish<<<(rows + 127) / 128, 128, 0, stream>>>(partial.data_ptr<float>(),
                                                           out.data_ptr<float>(), rows, nsplit);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

cpp_src = "torch::Tensor row_sum(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_ord01_split_row_off_by_one", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["row_sum"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.row_sum(x)
