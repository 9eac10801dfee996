"""Hostile candidate: never returns from forward (a busy loop holding the GIL).

The worker cannot answer anything, so only an outside deadline helps: kcv's call timeout_ms
kills the worker's process group and records status "timeout". Test:
test_hostile.py::test_infinite_loop_needs_the_callers_deadline (the test client's deadline).
"""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        n = 0
        while True:
            n += 1
