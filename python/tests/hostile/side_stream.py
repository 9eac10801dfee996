"""Hostile candidate (CUDA only): enqueues its work on a side stream behind a long GPU sleep and
returns without waiting (hack class 1, stream injection: a timer on the default stream would
stop before the work is done).

The worker synchronizes the whole device (every stream) after forward and only then copies the
result into kcv's output view, so the output is complete and correct: the trick can fool a
timer, never the values kcv judges. Without the synchronization the output would hold zeros
(CMP-01). Test: test_worker_cuda.py::test_side_stream_work_is_finished_before_the_copy.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.stream = torch.cuda.Stream()

    def forward(self, x, y, scale):
        out = torch.zeros_like(x)
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU cycles
            out.copy_(x + self.alpha * y * scale)
        return out
