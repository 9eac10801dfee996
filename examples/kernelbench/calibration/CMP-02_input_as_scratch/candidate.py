"""Defect (CMP-02): a Triton softmax that uses its input as scratch: the second pass stores
exp(x - max) over x, the third divides those in place of recomputing them. The output is
right; the caller's input is not. KernelBench's check misses it: it computes the reference
first, then the candidate, and compares outputs only, never looking at the inputs again."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        e = tl.exp(tl.load(x_row + offs, mask=mask, other=-float("inf")) - row_max)
        tl.store(x_row + offs, e, mask=mask)  # the defect: exp(x - max) written over the input
        s += tl.where(mask, e, 0.0)
    total = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        tl.store(y_row + offs, tl.load(x_row + offs, mask=mask, other=0.0) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024)
        return y
