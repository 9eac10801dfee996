"""Defect (PRC-01): an fp32 matmul whose inputs are first reduced to TF32's 10 explicit mantissa
bits (emulated here by clearing the low 13 of the 23 stored mantissa bits), then multiplied
in fp32. Each operand is off by up to 2^-10 relative, about 2^13 times fp32's rounding, under
a contract that declares fp32. KernelBench's check misses it: with uniform [0, 1) inputs and
K = 1024 the outputs are about 256 and off by about 0.2 (the truncation's bias, ~1e-3
relative), inside allclose's rtol of 1e-2."""

import torch
import torch.nn as nn


def _to_tf32(t):
    return (t.contiguous().view(torch.int32) & -8192).view(torch.float32)  # keep 10 mantissa bits


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(_to_tf32(A), _to_tf32(B))  # the defect: inputs rounded to TF32
