"""Defect (CMP-01): a Triton layer norm that takes the variance in one pass as E[x^2] - E[x]^2 in
fp32. When the row mean is large against its spread the two terms cancel catastrophically
(x + 1024 * RMS(x): E[x^2] ~ 1e6, var ~ 1, so fp32 keeps about one significant digit of var, or
none, and the output is off by percent or NaN). KernelBench's check misses it: torch.randn rows
have mean ~0, where E[x]^2 is negligible and the one-pass formula is as good as two passes."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    s = tl.zeros([BLOCK], dtype=tl.float32)
    ss = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < n_cols, other=0.0)
        s += x
        ss += x * x
    mean = tl.sum(s, axis=0) / n_cols
    var = tl.sum(ss, axis=0) / n_cols - mean * mean  # the defect: one-pass variance
    rstd = 1.0 / tl.sqrt_rn(var + eps)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.bias = nn.Parameter(0.1 * torch.randn(dim))
        self.eps = 1e-5

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        layer_norm_kernel[(rows,)](x, self.weight, self.bias, y, cols, self.eps, BLOCK=1024)
        return y
