"""Hostile candidate: returns an output tensor at once and fills it from a background thread
half a second later (hack class 2, thread injection; on a GPU the same idea is a side stream).

The worker copies the result into kcv's output view when forward returns (after synchronizing
the device on CUDA), so the late work is not in what kcv reads: the output holds zeros. Caught
by CMP-01 (values outside tau). Test: test_hostile.py::test_work_finished_after_return_is_not_seen.
"""

import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        out = torch.zeros_like(x)
        a, b = x.clone(), y.clone()

        def finish():
            time.sleep(5)  # after the worker has copied the output, even on a loaded host
            out.copy_(a + self.alpha * b * scale)

        threading.Thread(target=finish, daemon=True).start()
        return out
