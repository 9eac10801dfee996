"""Defect (ORD-02): a Triton row sum that aligns its vector loads to 512-byte segments: the first
`head` elements of each row, up to the next 512-byte boundary of x.data_ptr(), are summed
apart, the rest in BLOCK-wide chunks starting there. Every order is a valid fp32 sum, but the
order, and so the rounding, depends on the input's address: the same values at another
address give other bits. KernelBench's check misses it: allclose at 1e-2 cannot see a
last-bit difference, and it never calls twice on the same values."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, head, BLOCK: tl.constexpr,
                   HEAD_BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride_row
    h_offs = tl.arange(0, HEAD_BLOCK)
    h = tl.load(base + h_offs, mask=(h_offs < head) & (h_offs < n_cols), other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(head, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(base + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) + tl.sum(h, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        # the defect: the split point of every row depends on where the buffer happens to lie
        head = ((512 - x.data_ptr() % 512) % 512) // x.element_size()
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), head, BLOCK=1024,
                                      HEAD_BLOCK=128)
        return out
