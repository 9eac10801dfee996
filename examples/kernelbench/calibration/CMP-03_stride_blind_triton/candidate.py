"""Defect (CMP-03): a Triton leaky ReLU that indexes its input as a flat contiguous array
(x_ptr + i for i < numel) without .contiguous() or strides, and writes a contiguous output.
A transposed or sliced view is read in the wrong order (or past its elements). KernelBench's
check misses it: get_inputs() returns contiguous tensors only."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # the defect: element i of the view taken as x_ptr[i]
    tl.store(y_ptr + offs, tl.where(x >= 0, x, x * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        leaky_relu_kernel[(triton.cdiv(n, 4096),)](x, y, n, self.negative_slope, BLOCK=4096)
        return y
