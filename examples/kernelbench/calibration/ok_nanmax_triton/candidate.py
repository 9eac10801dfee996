"""Correct under the maxNum profiles only: a Triton row maximum with tl.maximum / tl.max, which
lower to maxnumf on the GPU (and drop NaN in the interpreter too): a NaN in a row is skipped,
where torch.amax returns NaN. The case declares "profile": "triton-default", under which that
is the max semantics and every gate passes; under strict and pytorch-eager EXC-01 fails."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + offs * stride_col, mask=offs < n_cols, other=-float("inf"))
        m = tl.maximum(m, x)
    tl.store(out_ptr + row, tl.max(m, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_max_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1), BLOCK=1024)
        return out
