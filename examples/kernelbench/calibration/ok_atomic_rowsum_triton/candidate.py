"""Correct Triton row sum by float atomics: each row is split into 1024-column chunks, one
program per (row, chunk) sums its chunk in fp32 and adds that partial, widened to fp64, into a
zero-initialized fp64 accumulator with tl.atomic_add; the accumulator is rounded to the input's
dtype at the end. The order of the atomic adds is whatever the GPU schedules, so the bits may
differ from call to call: the case declares "deterministic": false (ORD-02 does not apply).
The atomics are fp64 because fp32 atomics flush subnormals on NVIDIA GPUs (PTX atom/red
.add.f32; seen on the H200 with an fp32 version of this kernel: chunk sums of x * 2^-130
below 2^-126 vanished), which the strict profile forbids. On the CPU (TRITON_INTERPRET=1)
the programs run in order, so it is deterministic there."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

CHUNK = 1024


@triton.jit
def row_sum_atomic_kernel(x_ptr, acc_ptr, n_cols, stride_row, stride_col, CHUNK: tl.constexpr,
                          BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(chunk * CHUNK, chunk * CHUNK + CHUNK, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_row + offs * stride_col, mask=offs < n_cols, other=0.0)
    tl.atomic_add(acc_ptr + row, tl.sum(acc, axis=0).to(tl.float64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        acc = torch.zeros(rows, device=x.device, dtype=torch.float64)
        grid = (rows, triton.cdiv(cols, CHUNK))
        row_sum_atomic_kernel[grid](x, acc, cols, x.stride(0), x.stride(1), CHUNK=CHUNK, BLOCK=1024)
        return acc.to(x.dtype)
