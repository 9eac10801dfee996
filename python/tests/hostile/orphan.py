"""Hostile candidate: wrong (x + y), and it leaves a process behind: a double fork with setsid
at import, whose grandchild (a Python sleeping for ten minutes, its command line tagged with
TOKEN) escapes the worker's process group and outlives the worker, free to act after the audit
(set its verdicts to pass, say, once the store is closed).

Sandboxed, the grandchild stays in the kernel's PID namespace, which dies with the kernel: no
process tagged TOKEN is left once the audit ends. Unsandboxed it survives the audit.
Test: test_attacks.py.
"""

import os
import sys

import torch.nn as nn

TOKEN = "@TOKEN@"


def _escape():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)",
                                      "kcv-hostile-orphan", TOKEN])
        os._exit(0)
    os.waitpid(pid, 0)


_escape()


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        return x + y
