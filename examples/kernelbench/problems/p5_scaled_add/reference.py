import torch
import torch.nn as nn


class Model(nn.Module):
    """a + alpha * b."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, a, b):
        return a + self.alpha * b


batch_size = 8
dim = 100


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
