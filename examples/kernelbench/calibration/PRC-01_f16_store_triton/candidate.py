"""Defect (PRC-01): a Triton SiLU that rounds its sigmoid to fp16 before the multiply (a
"half-precision gate" kept from an fp16 version of the kernel): every output carries an
fp16 rounding, 2^-11 relative, about 2^13 times an fp32 rounding, under an fp32 contract.
KernelBench's check misses it: a relative error of 5e-4 is far inside allclose's 1e-2."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    gate = (1.0 / (1.0 + tl.exp(-x))).to(tl.float16).to(tl.float32)  # the defect: fp16 intermediate
    tl.store(y_ptr + offs, x * gate, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y
