import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A linear layer followed by the exact (erf) GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x))


batch_size = 16
in_features = 32
out_features = 24


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
