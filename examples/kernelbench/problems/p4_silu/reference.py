import torch
import torch.nn as nn


class Model(nn.Module):
    """SiLU: x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 8
dim = 80


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
