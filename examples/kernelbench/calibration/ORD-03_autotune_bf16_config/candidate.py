"""Defect (ORD-03): an autotuned Triton row mean whose first config accumulates in fp32 and whose
second (a "fast" config: wider block, bf16 accumulator) keeps its per-lane partial sums in
bf16, 8 significant bits. Whichever config the autotuner picks, a mean of 4096 N(0, 1)
values is off by ~1e-5 at worst, so KernelBench's allclose (atol 1e-2) accepts it; forced
to the second config it is ~10^4 times eager fp32's error. On the CPU (TRITON_INTERPRET=1)
there is no device timer: the configs tie and the first, correct one is kept."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _bench(kernel_call, quantiles):
    if torch.cuda.is_available():
        return triton.testing.do_bench(kernel_call, quantiles=quantiles)
    kernel_call()
    return [1.0] * len(quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024, "ACC_BF16": False}),
        triton.Config({"BLOCK": 2048, "ACC_BF16": True}),  # the defect: bf16 partial sums
    ],
    key=["n_cols"],
    do_bench=_bench,
)
@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr, ACC_BF16: tl.constexpr):
    row = tl.program_id(0)
    if ACC_BF16:
        acc = tl.zeros([BLOCK], dtype=tl.bfloat16)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=0.0)
        acc = (acc.to(tl.float32) + x).to(acc.dtype)
    tl.store(out_ptr + row, tl.sum(acc.to(tl.float32), axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_mean_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0))
        return out
