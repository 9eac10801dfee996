import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_add_kernel(a_ptr, b_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + alpha * b, mask=mask)


class ModelNew(nn.Module):
    """Correct Triton kernel: contiguous copies first, a masked tail, one program per block."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        block = 128
        scaled_add_kernel[(triton.cdiv(n, block),)](a, b, out, self.alpha, n, BLOCK=block)
        return out
