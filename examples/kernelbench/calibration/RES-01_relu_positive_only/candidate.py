"""Defect (RES-01, and CMP-02): a Triton ReLU that stores only the positive elements into a
torch.empty output, "since the rest are zero": every element where x <= 0 (or NaN) is never
written and keeps whatever the allocation held. KernelBench's check misses it: there a fresh
allocation is zero-filled (kcv's replica gives the candidate plain zero buffers, as a fresh
cudaMalloc or mmap is), so the unwritten elements happen to read as the right 0."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x, mask=mask & (x > 0))  # the defect: zeros are never stored


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y
