"""Reference for a calibration case: the Euclidean norm of a vector of length dim."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.linalg.vector_norm(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.linalg.vector_norm(x)


dim = 65536


def get_inputs():
    return [torch.randn(dim)]


def get_init_inputs():
    return []
