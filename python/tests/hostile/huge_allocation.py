"""Hostile candidate: asks for a 1 TiB buffer inside forward.

Under the worker's memory limit (kcv's memory_limit_bytes = RLIMIT_AS) torch's allocator fails
and raises; the worker reports status "exception" with the allocator's message and lives on (a
worker killed by the OOM killer instead would be a "crash"). Test:
test_hostile.py::test_huge_allocation_is_an_exception_and_the_worker_lives_on.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        scratch = torch.empty(1 << 40, dtype=torch.uint8)
        return x + self.alpha * y * scale + scratch[:1].float()
