"""Reference for a calibration case: SiLU, x * sigmoid(x), elementwise, on a (batch_size, dim)
matrix."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.silu(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
