"""Correct Triton layer norm (two passes, shifted data): one program per row; the mean as
s + mean(x - s) with s the row's first element (x - s is exact when the mean is large against
the spread, so the mean is as accurate as fp32 can hold it), then the variance as the mean of
squared deviations from it (no E[x^2] - E[x]^2 cancellation), then
(x - mean) * rstd * weight + bias; masked tails, any row length."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    shift = tl.load(x_row)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        s += tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0) - shift, 0.0)
    mean = shift + tl.sum(s, axis=0) / n_cols
    ss = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        d = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0) - mean, 0.0)
        ss += d * d
    rstd = 1.0 / tl.sqrt_rn(tl.sum(ss, axis=0) / n_cols + eps)
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
