"""Defect (PRC-02): a PyTorch matmul with a split-K path for long reductions (K >= 2048): the
product of each 512-wide K slice is computed in fp32, then rounded to fp16 and the partials
added in fp16 "to halve the workspace". At the reference K = 1024 it is a plain fp32 matmul,
so PRC-01 and every reference-shape check pass; at K = 2048 and 8192 each partial and each
add carries an fp16 rounding. KernelBench's check misses it: it runs K = 1024 only."""

import torch
import torch.nn as nn

SPLIT_K_FROM = 2048
SLICE = 512


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        K = A.shape[1]
        if K < SPLIT_K_FROM:
            return torch.matmul(A, B)
        acc = None
        for k in range(0, K, SLICE):
            part = torch.matmul(A[:, k:k + SLICE], B[k:k + SLICE]).half()  # the defect: fp16 partials
            acc = part if acc is None else acc + part
        return acc.float()
