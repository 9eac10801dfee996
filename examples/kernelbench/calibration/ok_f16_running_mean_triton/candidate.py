"""Correct with its declared fp16 accumulator: a Triton row mean of fp16 input whose 256 per-lane
partial sums are kept in fp16 (every term x / dim and every add rounds to fp16, as in the
reference's running mean), combined in fp32 at the end and stored as fp16. The case declares
"accumulator": "f16"; its error is smaller than the reference's own fp16 running sum, since
each lane adds only dim / 256 terms. Reads the input through its strides."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def f16_row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float16)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + offs * stride_col, mask=offs < n_cols, other=0.0)
        term = (x.to(tl.float32) / n_cols).to(tl.float16)
        acc = (acc + term).to(tl.float16)
    tl.store(out_ptr + row, tl.sum(acc.to(tl.float32), axis=0).to(tl.float16))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        f16_row_mean_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1), BLOCK=256)
        return out
