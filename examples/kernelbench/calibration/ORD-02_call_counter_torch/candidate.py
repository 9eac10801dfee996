"""Defect (ORD-02): a PyTorch row sum that "tunes itself online": it alternates between two chunk
sizes on successive calls (summing 512- or 256-column chunks, then the chunk sums), meaning to
time both. Each is an accurate fp32 sum, but the rounding differs, so two calls on the same
input disagree in the last bits. KernelBench's check misses it: allclose at 1e-2 cannot see
that, and each of its trials draws new inputs."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        chunk = (512, 256)[self.calls % 2]  # the defect: the order depends on a call counter
        rows, cols = x.shape
        if cols % chunk:
            return x.sum(dim=1)
        return x.reshape(rows, cols // chunk, chunk).sum(dim=2).sum(dim=1)
