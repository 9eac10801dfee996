"""The audit's progress display on stderr: done/total, rate, ETA and counts by status.

On a terminal it is one line redrawn in place; otherwise (a log file, CI, a pipe) it prints one
line per finished kernel, so a long audit's log says what happened to each kernel and when.
With events=True it prints one JSON object per line instead ({"event": "kernel_done" | "message"
| "deferred", ...}): what an orchestrator process tells the launcher of --procs (parallel.py).
Thread-safe: slots report from their own threads."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    def __init__(self, total: int, *, enabled: bool = True, stream=None, clock=time.monotonic,
                 events: bool = False):
        self.total = total
        self.enabled = enabled
        self.events = events
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.tty = (enabled and not events and hasattr(self.stream, "isatty")
                    and self.stream.isatty())
        self._lock = threading.Lock()

    def line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        counts = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (f"[{self.done}/{self.total}] {rate * 60:.1f} kernels/min, "
                f"elapsed {_duration(elapsed)}, ETA {_duration(eta)}" + (f" | {counts}" if counts else ""))

    def _event(self, **fields):
        self.stream.write(json.dumps(fields) + "\n")
        self.stream.flush()

    def kernel_done(self, kernel_id: str, status: str, seconds: float, note: str = ""):
        with self._lock:
            self.done += 1
            self.counts[status] += 1
            if not self.enabled:
                return
            if self.events:
                self._event(event="kernel_done", id=kernel_id, status=status,
                            seconds=round(seconds, 3), note=note)
                return
            if self.tty:
                self.stream.write("\r\x1b[2K" + self.line())
            else:
                extra = f" ({note})" if note else ""
                self.stream.write(f"kcv audit: {kernel_id}: {status} in {seconds:.1f}s{extra}  "
                                  f"{self.line()}\n")
            self.stream.flush()

    def message(self, text: str):
        """A line that must not be overwritten (a retry, a warning)."""
        with self._lock:
            if not self.enabled:
                return
            if self.events:
                self._event(event="message", text=text)
                return
            self.stream.write(("\r\x1b[2K" if self.tty else "") + text + "\n")
            if self.tty:
                self.stream.write(self.line())
            self.stream.flush()

    def warning(self, text: str):
        """A line shown even with --no-progress: what the run did to the store beyond recording
        verdicts (a row judged again, a kernel recorded as poison, suspects run alone)."""
        with self._lock:
            if self.events:
                self._event(event="warning", text=text)
                return
            redraw = self.enabled and self.tty
            self.stream.write(("\r\x1b[2K" if redraw else "") + text + "\n")
            if redraw:
                self.stream.write(self.line())
            self.stream.flush()

    def deferred(self, kernel_id: str, why: str):
        """A kernel left for the launcher's pass alone at the end (events mode only)."""
        with self._lock:
            if self.events:
                self._event(event="deferred", id=kernel_id, why=why)

    def finish(self):
        with self._lock:
            if self.enabled and self.tty:
                self.stream.write("\n")
                self.stream.flush()
