"""Hostile candidate: writes to stdout every way it can, at import and in forward: print,
sys.stdout, sys.__stdout__, os.write(1, ...), and C printf through ctypes.

stdout is the protocol's reply stream; the worker keeps a private duplicate for replies and
points fd 1 and sys.stdout at stderr before any candidate code runs, so all of this lands in
stderr and every reply line stays valid JSON (a stray line would be a protocol violation and
kill the worker). Test: test_hostile.py::test_stdout_noise_lands_in_stderr.
"""

import ctypes
import os
import sys

import torch.nn as nn

MARK = "KCV-HOSTILE-NOISE"


def shout(where):
    print(f"{MARK} print {where}")
    sys.stdout.write(f"{MARK} sys.stdout {where}\n")
    sys.__stdout__.write(f"{MARK} sys.__stdout__ {where}\n")
    sys.__stdout__.flush()
    os.write(1, f"{MARK} fd1 {where}\n".encode())
    libc = ctypes.CDLL(None)
    libc.printf(f"{MARK} printf {where}\n".encode())
    libc.fflush(None)


shout("import")


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        shout("forward")
        return x + self.alpha * y * scale
