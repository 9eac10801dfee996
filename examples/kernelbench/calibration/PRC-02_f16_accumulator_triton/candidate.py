"""Defect (PRC-02, and PRC-01): a Triton row mean whose per-lane partial sums are kept in fp16:
each add rounds to 11 significant bits, about 2^13 times fp32's error at every length
K = 256, 2048, 8192. KernelBench's check misses it: dividing by dim = 4096 shrinks the error
of a mean of N(0, 1) values to ~1e-5, far inside allclose's atol of 1e-2."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float16)  # the defect: an fp16 accumulator
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=0.0)
        acc = (acc.to(tl.float32) + x).to(tl.float16)
    tl.store(out_ptr + row, tl.sum(acc.to(tl.float32), axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_mean_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=1024)
        return out
