"""Hostile candidate: caches its result keyed by the inputs' data_ptr() and returns the cached
tensor when the pointers repeat (hack class 5: results cached by pointer).

The worker maps every call's file at a new address (the previous range stays reserved until the
next file is mapped), so the key never repeats on consecutive calls and the cache cannot serve a
stale result; had it hit, the stale values would fail CMP-01/ORD-02 against fresh inputs. The
keys go to stderr so the test can see them differ. Test:
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
        key = (x.data_ptr(), y.data_ptr())
        print(f"KCV-HOSTILE-KEY {key}", file=sys.stderr, flush=True)
        if key not in self.cache:
            self.cache[key] = x + self.alpha * y * scale
        return self.cache[key]
