"""Reference for a calibration case: y = x * scale + shift, elementwise, on a (batch_size, dim)
matrix whose byte size (40000) is not a multiple of 512."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * scale + shift."""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        return x * self.scale + self.shift


batch_size = 10
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [2.0, 0.5]
