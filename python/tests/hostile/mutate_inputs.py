"""Hostile candidate: zeroes its first input in place after computing the result (KernelBench
PR #82's zero_out trick: a reference run afterwards on the same buffers would agree with zeros).

kcv never reuses a candidate's buffers for the reference, and compares every input byte with its
snapshot: caught as inputs_unchanged false (CMP-02 "input x modified", RES-01). Test:
test_hostile.py::test_in_place_input_writes_are_visible_to_kcv.
"""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        out = x + self.alpha * y * scale
        x.zero_()
        return out
