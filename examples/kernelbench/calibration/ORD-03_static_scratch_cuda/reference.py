"""Reference for a calibration case: the sum of each row of a (batch_size, dim) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sum: x.sum(dim=1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
