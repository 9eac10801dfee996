"""Correct Triton per-column affine map reading its input through both strides (no copy):
2-D blocks of 16 x 256 elements, x at row * stride_row + col * stride_col, so transposed,
sliced, broadcast (stride 0) and offset views are all read right; masked at both edges; the
output is a fresh contiguous tensor. x * w + b is computed as two roundings, as eager does."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_cols_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride_row, stride_col,
                       BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0)
    prod = x * w[None, :]
    tl.store(y_ptr + rows[:, None] * n_cols + cols[None, :], prod + b[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(rows, 16), triton.cdiv(cols, 256))
        affine_cols_kernel[grid](x, self.weight, self.bias, y, rows, cols, x.stride(0), x.stride(1),
                                 BR=16, BC=256)
        return y
