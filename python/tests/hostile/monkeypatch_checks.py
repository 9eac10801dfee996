"""Hostile candidate: patches the comparison functions a Python harness would trust
(torch.allclose, torch.equal, torch.testing.assert_close, torch.Tensor.__eq__) at import time,
then returns zeros.

The patches live only in the worker process; kcv compares in its own process with the C++ gate
judges, which no candidate code can reach. Caught by CMP-01 (values outside tau) on status "ok".
Test: test_hostile.py::test_patched_comparisons_do_not_reach_the_trusted_side.
"""

import torch
import torch.nn as nn
import torch.testing

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        return torch.zeros_like(x)
