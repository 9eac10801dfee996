"""Reference for a calibration case: y = x * scale (scale = 0.5), elementwise, on a
(batch_size, dim) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * scale."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
