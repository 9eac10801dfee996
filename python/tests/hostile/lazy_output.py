"""Hostile candidate: returns a torch.Tensor subclass whose own storage holds zeros and whose
__torch_function__ swaps in the real result whenever torch code touches it (hack class 3, lazy or
proxy outputs: a Python harness comparing with torch.allclose(out, ref) would see right values,
computed outside any timed region).

The worker strips subclasses (Tensor.as_subclass(torch.Tensor)) before copying into kcv's output
view, so kcv reads the storage itself: zeros. Caught by CMP-01 (values outside tau). Test:
test_hostile.py::test_a_lazy_tensor_subclass_gives_its_storage_not_its_story.
"""

import torch
import torch.nn as nn


class Lazy(torch.Tensor):
    real = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = tuple(a.real if isinstance(a, Lazy) else a for a in args)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        out = torch.zeros_like(x).as_subclass(Lazy)
        out.real = x + self.alpha * y * scale
        return out
