import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Mutates its input: the ReLU runs in place on x, saving an allocation. The output is
    right; the caller's tensor is not what it passed in any more."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.relu_(x)
        return x * 2.0
