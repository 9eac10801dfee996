"""Reference for a calibration case: layer norm over the last dim of a (batch_size, dim) matrix,
with a learned affine (weight, bias) and eps = 1e-5."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.layer_norm(x, (dim,), weight, bias, eps)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.bias = nn.Parameter(0.1 * torch.randn(dim))
        self.eps = 1e-5

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
