"""Correct under fast-math only: a PyTorch scale with explicit FTZ/DAZ (sign-preserving flush of
subnormal inputs and results), the semantics of a -use_fast_math build, run the same on the
CPU. It declares "profile": "fast-math", under which flushing is allowed and every gate
passes; under the keeping profiles (strict, ...) EXC-02 fails."""

import torch
import torch.nn as nn


def _flush(t):
    tiny = torch.finfo(t.dtype).tiny  # the smallest normal number
    return torch.where(t.abs() < tiny, t * 0.0, t)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _flush(_flush(x) * self.scale)
