"""Hostile candidate: returns the right result but keeps its input view and writes into it from
a background thread after the call has returned.

The worker unmaps the call's file before replying and leaves the range inaccessible, so the late
write faults: the worker dies of SIGSEGV and kcv records the next call as a "crash" (the late
write can never change bytes kcv has already read back). Test:
test_hostile.py::test_a_write_through_a_kept_view_after_the_call_kills_the_worker.
"""

import threading
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        out = x + self.alpha * y * scale

        def scribble():
            time.sleep(5)  # after the worker has unmapped the call file, even on a loaded host
            x.fill_(0.0)

        threading.Thread(target=scribble, daemon=True).start()
        return out
