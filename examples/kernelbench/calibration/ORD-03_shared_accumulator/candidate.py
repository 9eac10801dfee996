"""Defect (ORD-03): a PyTorch row sum that keeps one float64 accumulator per (rows, device) in a
class-level cache, zeroes it and adds the row sums of 32-column chunks into it (float64, so a
lone call is as accurate as eager), then rounds it to the input's dtype. Two calls at the same
time share the accumulator: one zeroes or adds into the other's partial sums, and both return
wrong rows. KernelBench's check misses it: it makes one call at a time. The kernel yields the
interpreter between chunks, as a long kernel is preempted, so concurrent calls interleave on a
loaded host too."""

import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    _scratch = {}  # the defect: one accumulator shared by every call, never per call

    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        key = (rows, str(x.device))
        acc = self._scratch.get(key)
        if acc is None:
            acc = self._scratch[key] = torch.zeros(rows, dtype=torch.float64, device=x.device)
        acc.zero_()
        time.sleep(0)
        for start in range(0, cols, 32):
            acc += x[:, start:start + 32].sum(dim=1, dtype=torch.float64)
            time.sleep(0)
        return acc.to(x.dtype)
