"""Defect (EXC-02 under every profile but fast-math): a Triton scale kernel that flushes
subnormals explicitly, the way an FTZ/DAZ build does (sign kept): inputs below 2^-126 in
magnitude read as zero and so do results, so it runs the same on the CPU (TRITON_INTERPRET=1).
Under strict, cuda-default, triton-default and pytorch-eager subnormals must be kept, so
x * 2^-130 inputs fail; under fast-math flushing is the declared semantics and it passes.
KernelBench's check misses it: torch.randn never draws a subnormal."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

FLT_MIN = tl.constexpr(1.1754943508222875e-38)  # 2^-126, the smallest normal float32


@triton.jit
def scale_ftz_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    x = tl.where(tl.abs(x) < FLT_MIN, x * 0.0, x)  # the defect: subnormal inputs read as (signed) 0
    y = x * scale
    y = tl.where(tl.abs(y) < FLT_MIN, y * 0.0, y)  # and subnormal results are flushed
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        scale_ftz_kernel[(triton.cdiv(n, 4096),)](x, y, n, self.scale, BLOCK=4096)
        return y
