"""Hostile candidate: dereferences address 0 (ctypes.string_at(0)) inside forward.

The worker process dies of SIGSEGV before replying (faulthandler prints the Python stack to
stderr first). Caught by kcv as status "crash" ("the worker process (pid N) died of signal 11");
every gate that needs an "ok" call fails with that message, and the next call starts a new
worker. Test: test_hostile.py::test_segfault_kills_the_worker_with_sigsegv.
"""

import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        ctypes.string_at(0)
        return x + self.alpha * y * scale
