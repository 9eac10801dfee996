"""Reference for a calibration case: subtracts each row's mean from a (batch_size, dim) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x - x.mean(dim=1, keepdim=True)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x - x.mean(dim=1, keepdim=True)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
