"""Hostile candidate: right values, but its worker ends itself (os._exit(0)) a moment after each
call has returned, so it never dies inside a call; unnoticed, kcv would start a new worker for
the next call and the kernel would pass every gate.

kcv records a worker that dies between calls as a crash of the call that follows (the call is
not run): the gates whose probes get that record fail. Test: test_attacks.py.
"""

import os
import threading

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        threading.Timer(0.05, os._exit, (0,)).start()
        return x + self.alpha * y * scale
