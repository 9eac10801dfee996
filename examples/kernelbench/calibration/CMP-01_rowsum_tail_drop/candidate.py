"""Defect (CMP-01): a Triton row sum whose loop covers only the full BLOCK-wide chunks of a row, so
the last dim % BLOCK columns are never added (no tail mask). KernelBench's check misses it: it
runs only the reference shape, dim = 4096 = 8 * BLOCK, where there is no tail."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    n_full = (n_cols // BLOCK) * BLOCK  # the defect: the partial last chunk is skipped
    for start in range(0, n_full, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_row + offs * stride_col)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1), BLOCK=512)
        return out
