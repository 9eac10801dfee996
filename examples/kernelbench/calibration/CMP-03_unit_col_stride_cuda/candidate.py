"""Defect (CMP-03): a CUDA row-centring kernel that passes the input's row stride (x.stride(0))
but takes the column stride to be 1, and skips .contiguous() to save the copy. A transposed
view (column stride = rows) or a sliced one (column stride 2) is read at the wrong elements.
KernelBench's check misses it: get_inputs() returns contiguous tensors only."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

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

// One block per row. Element (r, c) is read at x[r * row_stride + c]: the defect, the column
// stride is assumed to be 1. The output is contiguous.
__global__ void center_rows(const float* __restrict__ x, long long row_stride,
                            float* __restrict__ y, int cols) {
  __shared__ float sh[kThreads / 32];
  const float* xr = x + blockIdx.x * row_stride;
  float* yr = y + (long long)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += xr[c];
  const float mean = block_sum(s, sh) / cols;
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = xr[c] - mean;
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor center_rows_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "center_rows: a 2-D float32 CUDA tensor expected");
  auto y = torch::empty({x.size(0), x.size(1)}, x.options());
  if (x.numel() == 0) return y;
  center_rows<<<x.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), x.stride(0), y.data_ptr<float>(), (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_src = "torch::Tensor center_rows_cuda(torch::Tensor x);"

_ext = load_inline(name="kcv_cal_cmp03_unit_col_stride", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["center_rows_cuda"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.center_rows_cuda(x)
