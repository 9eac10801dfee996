"""Defect (CMP-01): a softmax that exponentiates x directly, without subtracting the row maximum.
exp overflows to Inf once an element exceeds about 88.7, and Inf / Inf is NaN, so inputs of
larger magnitude (x * 128, x * 2^100) give NaN rows. KernelBench's check misses it: its inputs
are torch.randn, whose largest element in 4096 draws is about 4, where exp(x) is harmless."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x)  # the defect: no max subtraction
        return e / torch.sum(e, dim=1, keepdim=True)
