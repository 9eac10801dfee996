"""Reference for a calibration case: C = A @ B for A (M, K) and B (K, N), uniform [0, 1) inputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul(A, B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 64
K = 1024
N = 64


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
