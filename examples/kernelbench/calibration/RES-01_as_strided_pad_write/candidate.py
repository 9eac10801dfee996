"""Defect (RES-01): a PyTorch vector norm that views its input as rows of 8 lanes through
as_strided, after zero-filling the padding up to a multiple of 8 "in place" past the end of
the input (x.as_strided((pad,), (1,), offset + n).zero_()). At lengths that are not a multiple
of 8 that writes past the input: into whatever follows it in the storage, or, where the
storage ends there, as_strided raises. KernelBench's check misses it: it runs only
dim = 65536, a multiple of 8, where there is no padding to write."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        n8 = (n + 7) // 8 * 8
        if n8 != n:  # the defect: the padding lies past the end of the input
            x.as_strided((n8 - n,), (1,), x.storage_offset() + n).zero_()
        lanes = x.as_strided((n8 // 8, 8), (8, 1), x.storage_offset())
        return torch.sqrt((lanes * lanes).sum(dim=0).sum())
