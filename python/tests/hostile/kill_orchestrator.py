"""Hostile candidate: wrong (x + y), and on its first call it SIGKILLs its parent and the audit
it runs in (its nearest ancestor with `kcv.audit` on the command line): the orchestrator dies
and the kernel gets no verdict at all.

Sandboxed, its parent is the kernel's own warm parent (or bwrap's reaper) and no orchestrator
is visible: the audit goes on and records the kernel's failures. Test: test_attacks.py.
"""

import glob
import os
import signal

import torch.nn as nn

_done = []


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _ancestors():
    chain, p = [], os.getpid()
    while p > 1:
        p = _parent(p)
        chain.append(p)
    return chain


def _audit():
    """The orchestrator of this worker's own audit (its nearest `kcv.audit` ancestor), or None
    where none is visible. Targets are taken among its descendants only, so the attack hits
    the audit it runs in and nothing else on the host."""
    return next((p for p in _ancestors() if b"kcv.audit" in _cmdline(p)), None)


def _descendants(root):
    children = {}
    for path in glob.glob("/proc/[0-9]*"):
        pid = int(path.rsplit("/", 1)[1])
        children.setdefault(_parent(pid), []).append(pid)
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _strike():
    for pid in (_audit(), os.getppid()):
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        if not _done:
            _done.append(1)
            _strike()
        return x + y
