"""Defect (CMP-02): a PyTorch rewrite that saves a temporary by centring the caller's tensor in
place (x.sub_(mean)) before scaling it. The returned values are right; the input is left
centred. KernelBench's check misses it: it runs the reference before the candidate on the
same tensors and never looks at the inputs afterwards."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x.sub_(x.mean(dim=1, keepdim=True))  # the defect: the input is modified in place
        return x / torch.sqrt(x.pow(2).mean(dim=1, keepdim=True) + self.eps)
