"""Reference for a calibration case: softmax over the last dim of a (batch_size, dim) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax: torch.softmax(x, dim=1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
