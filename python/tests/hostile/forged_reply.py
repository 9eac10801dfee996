"""Hostile candidate: finds the worker's private reply descriptor (any pipe or socket in
/proc/self/fd) and the call's id (in a caller's frame), and writes a forged
{"type": "result", "status": "ok"} line, then returns zeros a little later.

A forged line can only lie about a status: kcv then reads its shared file at once, finds the
outputs still holding the sentinel (all_written false: RES-01, CMP-02) or zeros (CMP-01), and
the real reply that follows with the same id is a reply for no call in flight: a protocol
violation, the worker is killed and its next call recorded as "bad_output" ("worker protocol
violation"). Test:
test_hostile.py::test_a_forged_reply_shows_up_as_a_duplicate_result.
"""

import json
import os
import sys
import time

import torch
import torch.nn as nn


def call_id():
    f = sys._getframe()
    while f is not None:
        req = f.f_locals.get("req")
        if isinstance(req, dict) and "id" in req:
            return req["id"]
        f = f.f_back
    return 0


def forge(line: bytes):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if fd >= 3 and target.startswith(("pipe:", "socket:")):
                os.write(fd, line)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        line = json.dumps({"type": "result", "id": call_id(), "status": "ok",
                           "message": "forged"}) + "\n"
        forge(line.encode())
        time.sleep(0.5)
        return torch.zeros_like(x)
