"""Hostile candidate: wrong (x + y), and on its first call it sends SIGNAL (SIGKILL or SIGSTOP)
to its sibling, the trusted reference worker of the same kernel (a child of the reference's
warm parent, whose command line says "--warm meta", or a plain `-m kcv.worker` process that is
not itself), among the processes of its own audit. A killed or stopped reference turns the
candidate's failure into a harness error unless kcv blames the candidate for it.

Sandboxed, /proc shows only the candidate's own sandbox: the reference is out of reach and the
kernel's gates fail on the candidate's values. Test: test_attacks.py.
"""

import glob
import os
import signal

import torch.nn as nn

SIGNAL = "@SIGNAL@"
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
    root = _audit()
    if root is None:
        return
    mine = {os.getpid(), *_ancestors()}
    family = _descendants(root)
    servers = {p for p in family if b"kcv.worker.forkserver" in _cmdline(p) and b"meta" in _cmdline(p)}
    for pid in family:
        args = _cmdline(pid)
        plain = b"kcv.worker" in args
        if pid not in mine and (_parent(pid) in servers or plain):
            try:
                os.kill(pid, getattr(signal, SIGNAL))
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
