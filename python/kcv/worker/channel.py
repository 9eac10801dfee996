"""The worker's two protocol streams (docs/06_worker_protocol.md §1).

stdout belongs to the protocol: the worker keeps private duplicates of fd 0 and fd 1 for requests
and replies, then points fd 1 at stderr and fd 0 at /dev/null, and makes sys.stdout the stderr
stream. Candidate code that prints (Python print, os.write(1, ...), C printf, sys.__stdout__)
therefore lands in stderr, and candidate code that reads stdin sees end of file instead of
swallowing requests. This must run before any candidate code and ideally before heavy imports,
so kcv.worker.__main__ calls protect() first thing.
"""

import json
import math
import os
import sys
import threading

MAX_MESSAGE_CHARS = 4000  # a reply line must stay far below the protocol's 16 MiB


class Channel:
    """Reads request lines from a private copy of fd 0, writes reply lines to one of fd 1."""

    def __init__(self, in_fd: int, out_fd: int):
        self._in = os.fdopen(in_fd, "rb", buffering=1 << 16)
        self._out_fd = out_fd
        self._lock = threading.Lock()

    def requests(self):
        """Yields each non-empty request line as text; ends at end of input."""
        while True:
            line = self._in.readline()
            if not line:
                return
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                yield text

    def send(self, reply: dict) -> None:
        """Writes one reply as one JSON line; exits the process when kcv is gone."""
        data = (json.dumps(plain(reply), allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self._out_fd, view)
                except InterruptedError:
                    continue
                except OSError:
                    os._exit(2)  # kcv closed its end: nothing left to serve
                view = view[n:]


def protect() -> Channel:
    """Moves the protocol off fds 0 and 1 and returns the channel over the private copies."""
    in_fd = os.dup(0)  # os.dup makes non-inheritable descriptors: compilers we spawn get none
    out_fd = os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, "r")  # noqa: SIM115 (lives as long as the process)
    return Channel(in_fd, out_fd)


def plain(value):
    """`value` as strict JSON data: non-finite floats and unknown objects become strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, with "..." when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
