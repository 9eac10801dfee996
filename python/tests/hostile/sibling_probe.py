"""Hostile candidate: pygpubench's attack classes across the process boundary. It computes
nothing right by itself (x + y) and returns the right answer only when its attack MODE reached
a process outside its own worker, so the verdict itself tells whether the attack got through:
- `ptrace`: PTRACE_SEIZE of its sibling, the trusted reference worker (then detach);
- `proc_mem`: /proc/<reference>/mem opened for writing (the way to patch a sibling's code or
  data, GOT entries included);
- `proc_parent`: the orchestrator's command line read from /proc (where --store is);
- `fd_reuse`: a descriptor of the orchestrator's files (the store, a corpus) inherited by the
  worker (kcv passes none but 0, 1, 2: blocked with or without the sandbox).

Sandboxed, no process outside the kernel's sandbox is visible and every mode fails: the kernel
fails CMP-01. Unsandboxed, ptrace, proc_mem and proc_parent succeed and the kernel passes.
Test: test_attacks.py.
"""

import ctypes
import glob
import os

import torch.nn as nn

MODE = "@MODE@"
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000


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


def _others():
    """Processes of this worker's own audit (its orchestrator and the orchestrator's other
    descendants) that are neither this worker nor its ancestors."""
    root = _audit()
    if root is None:
        return []
    mine = {os.getpid(), *_ancestors()}
    return [root] + [p for p in _descendants(root) if p not in mine]


def _ptrace():
    """Seizes a sibling (not the orchestrator), stops it a moment and lets it go."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    for pid in _others()[1:]:
        if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
            libc.ptrace(PTRACE_INTERRUPT, pid, None, None)
            try:
                os.waitpid(pid, WALL)
            except OSError:
                pass
            libc.ptrace(PTRACE_DETACH, pid, None, None)
            return True
    return False


def _proc_mem():
    for pid in _others():
        try:
            with open(f"/proc/{pid}/mem", "r+b"):
                return True
        except OSError:
            continue
    return False


def _proc_parent():
    root = _audit()
    return root is not None and b"--store" in _cmdline(root)


def _fd_reuse():
    for fd in range(3, 1024):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith((".db", ".db-wal", ".db-shm", ".jsonl")):
            return True
    return False


def _reached() -> bool:
    try:
        return {"ptrace": _ptrace, "proc_mem": _proc_mem, "proc_parent": _proc_parent,
                "fd_reuse": _fd_reuse}[MODE]()
    except Exception:  # noqa: BLE001
        return False


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.reached = None

    def forward(self, x, y, scale):
        if self.reached is None:
            self.reached = _reached()
        if self.reached:
            return x + self.alpha * y * scale
        return x + y
