"""Reference for a calibration case: a per-column affine map x * weight + bias on a
(batch_size, dim) matrix, weight and bias learned vectors of length dim."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * weight + bias, broadcast over rows."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return x * self.weight + self.bias


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
