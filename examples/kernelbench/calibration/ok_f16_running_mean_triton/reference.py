"""Reference for a calibration case: the mean of each row of an fp16 (batch_size, dim) matrix,
accumulated in the input dtype as a running sum of x[:, j] / dim, left to right, so in fp16
every add rounds to fp16. (In float64 the same module is the exact mean.)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A running row mean in the input's dtype."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.shape[1]
        acc = torch.zeros_like(x[:, 0])
        for j in range(n):
            acc = acc + x[:, j] / n
        return acc


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
