"""Defect (ORD-01): a single-shot Triton row sum: each program loads its whole row as one block
of BLOCK = next_power_of_2(dim) elements, capped at 8192 to bound register use, with no loop,
so rows longer than 8192 lose every element past the first 8192. KernelBench's check misses
it: the reference dim is 4096, and so is every shape it runs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        block = min(triton.next_power_of_2(x.shape[1]), 8192)  # the defect: no loop past 8192
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=block)
        return out
