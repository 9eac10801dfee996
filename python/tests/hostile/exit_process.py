"""Hostile candidate: ends the worker process with os._exit(3) inside forward.

No Python handler runs; stdout closes without a result. Caught by kcv as status "crash" ("the
worker process (pid N) exited with exit code 3"). Test:
test_hostile.py::test_exit_from_forward_is_a_crash_with_its_exit_code.
"""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        os._exit(3)
