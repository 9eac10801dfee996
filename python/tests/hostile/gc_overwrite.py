"""Hostile candidate: computes the right answer, then walks gc.get_objects() and fills every
other floating tensor it can reach with NaN (the inputs, and whatever reference or expected
tensors a harness might keep in the same process).

In the worker the only such tensors are this call's own views (the reference runs in another
process; the candidate role drops the reference Model after copying its weights). The inputs
are views over kcv's shared file, so the NaN fill is an input mutation: caught by kcv's byte
comparison of every input region (inputs_unchanged false; CMP-02 "input x modified", RES-01).
Test: test_hostile.py::test_gc_walk_can_only_reach_this_calls_views.
"""

import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        out = x + self.alpha * y * scale
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj is not out and obj.is_floating_point():
                try:
                    obj.fill_(float("nan"))
                except Exception:  # noqa: BLE001 (inference tensors, leaves needing grad)
                    pass
        return out
