"""Defect (CMP-03): a PyTorch rewrite that takes a "zero-copy" flat view of its input through the
storage (torch.empty(0).set_(x.untyped_storage())), which drops the storage offset and the
strides: a view at an offset is read from the storage's start, a transposed or sliced view in
storage order. KernelBench's check misses it: get_inputs() returns fresh contiguous tensors,
whose storage is exactly their elements, in order, from offset 0."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        flat = torch.empty(0, dtype=x.dtype, device=x.device).set_(x.untyped_storage())  # the defect
        return torch.clamp(flat[: x.numel()], -1.0, 1.0).view(x.shape)
