"""Hostile candidate: caches its result keyed by id() of the input tensor objects.

The worker makes new tensor objects for every call and keeps the previous call's objects alive
until the new ones exist, so ids never repeat on consecutive calls; a stale hit would fail
CMP-01/ORD-02. Keys go to stderr for the test. Test:
test_hostile.py::test_results_cached_by_pointer_or_identity_never_hit.
"""

import sys

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.cache = {}

    def forward(self, x, y, scale):
        key = (id(x), id(y))
        print(f"KCV-HOSTILE-KEY {key}", file=sys.stderr, flush=True)
        if key not in self.cache:
            self.cache[key] = x + self.alpha * y * scale
        return self.cache[key]
