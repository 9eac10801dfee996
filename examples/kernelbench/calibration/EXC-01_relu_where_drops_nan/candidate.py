"""Defect (EXC-01 under strict and pytorch-eager): a ReLU written as torch.where(x > 0, x, 0).
NaN > 0 is false, so relu(NaN) gives 0 where torch.relu propagates NaN. That is the
maxNum semantics of fmaxf / Triton's maximum, which the cuda-default, fast-math and
triton-default profiles accept, and which strict and pytorch-eager do not. KernelBench's
check misses it: torch.randn never draws a NaN."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x > 0, x, torch.zeros_like(x))  # the defect: NaN -> 0
