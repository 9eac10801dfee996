"""Defect (ORD-03): a CUDA row sum whose per-row accumulator and chunk sums are static __device__
arrays, one set for the whole process. A call is three extension calls on the caller's stream:
zero the accumulator, add the 1024-column chunk sums of every row into it, copy it out. Calls
made at the same time from several threads (each on its own stream) zero and add into the same
array, so rows come out double-counted or partial. KernelBench's check misses it: it makes one
call at a time, on one stream, and a lone call is a correct, deterministic fp32 sum."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

constexpr int kThreads = 256;
constexpr int kChunk = 1024;
constexpr int kMaxRows = 4096;

__device__ float g_acc[kMaxRows];                 // the defect: one accumulator per process
__device__ float g_part[kMaxRows * 8];            // chunk sums, at most 8 chunks a row here

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

__global__ void zero_acc(int rows) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) g_acc[r] = 0.0f;
}

// Block (c, r) adds the sum of chunk c of row r into g_acc[r], chunk after chunk in the
// order of c (a single-threaded tail keeps one call deterministic).
__global__ void chunk_sums(const float* __restrict__ x, int cols, int nchunks) {
  __shared__ float sh[kThreads / 32];
  const int c = blockIdx.x, r = blockIdx.y;
  const float* xr = x + (long long)r * cols;
  const int begin = c * kChunk, end = begin + kChunk < cols ? begin + kChunk : cols;
  float s = 0.0f;
  for (int i = begin + threadIdx.x; i < end; i += kThreads) s += xr[i];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) g_part[r * nchunks + c] = s;
}

__global__ void add_chunks(int rows, int nchunks) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < nchunks; ++c) g_acc[r] += g_part[r * nchunks + c];
}

__global__ void copy_out(float* __restrict__ out, int rows) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) out[r] = g_acc[r];
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

void zero_rows(int64_t rows) {
  zero_acc<<<(unsigned)((rows + 127) / 128), 128, 0, at::cuda::getCurrentCUDAStream()>>>((int)rows);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void accumulate_rows(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "accumulate_rows: a contiguous 2-D float32 CUDA tensor expected");
  const int rows = (int)x.size(0), cols = (int)x.size(1);
  const int nchunks = (cols + kChunk - 1) / kChunk;
  TORCH_CHECK(rows <= kMaxRows && nchunks <= 8, "accumulate_rows: larger than the static scratch");
  auto stream = at::cuda::getCurrentCUDAStream();
  chunk_sums<<<dim3(nchunks, rows), kThreads, 0, stream>>>(x.data_ptr<float>(), cols, nchunks);
  add_chunks<<<(rows + 127) / 128, 128, 0, stream>>>(rows, nchunks);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void copy_rows(torch::Tensor out) {
  const int rows = (int)out.numel();
  copy_out<<<(rows + 127) / 128, 128, 0, at::cuda::getCurrentCUDAStream()>>>(out.data_ptr<float>(), rows);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

cpp_src = """
void zero_rows(int64_t rows);
void accumulate_rows(torch::Tensor x);
void copy_rows(torch::Tensor out);
"""

_ext = load_inline(name="kcv_cal_ord03_static_scratch", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["zero_rows", "accumulate_rows", "copy_rows"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        if rows > 4096 or cols == 0 or cols > 8 * 1024:  # outside the static scratch: plain sum
            return x.sum(dim=1)
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        _ext.zero_rows(rows)  # the defect: the three steps share one process-wide scratch
        _ext.accumulate_rows(x)
        _ext.copy_rows(out)
        return out
