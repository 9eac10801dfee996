"""Defect (ORD-02): a CUDA row sum that tunes its block size online, alternating 256 and 512
threads per block on successive calls (to time both). The block reduction's order follows
the thread count, so two calls on the same input differ in the last bits. KernelBench's check
misses it: allclose at 1e-2 cannot see that, and each of its trials draws new inputs."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_FLAGS = ["-O3"]

cuda_src = r"""
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per row, any multiple of 32 threads up to 1024.
__global__ void row_sum(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  s = warp_sum(s);
  if (lane == 0) sh[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = warp_sum(lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0f);
    if (lane == 0) out[blockIdx.x] = s;
  }
}
"""

binding_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor row_sum_threads(torch::Tensor x, int64_t threads) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "row_sum: a 2-D float32 CUDA tensor expected");
  TORCH_CHECK(threads % 32 == 0 && threads >= 32 && threads <= 1024, "threads: a multiple of 32 up to 1024");
  auto xc = x.contiguous();
  auto out = torch::empty({xc.size(0)}, xc.options());
  if (xc.size(0) == 0) return out;
  row_sum<<<xc.size(0), (unsigned)threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), out.data_ptr<float>(), (int)xc.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

cpp_src = "torch::Tensor row_sum_threads(torch::Tensor x, int64_t threads);"

_ext = load_inline(name="kcv_cal_ord02_call_counter", cpp_sources=cpp_src,
                   cuda_sources=cuda_src + binding_src, functions=["row_sum_threads"],
                   extra_cuda_cflags=CUDA_FLAGS, verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        threads = (256, 512)[self.calls % 2]  # the defect: the launch config follows a call counter
        return _ext.row_sum_threads(x, threads)
