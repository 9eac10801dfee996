"""Defect (EXC-01): a "branch-free" Triton ReLU, x * (x > 0). For finite x it is exact, but
-Inf * 0 is NaN, so relu(-Inf) comes out NaN instead of 0 (under every profile: the NaN is
made, not dropped). KernelBench's check misses it: torch.randn never draws an infinity."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * (x > 0).to(tl.float32), mask=mask)  # the defect: -Inf * 0 = NaN


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y
