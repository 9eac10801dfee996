"""Spreading the audit's kernels over the GPUs of one host.

Each kernel's workers see exactly one GPU: their command runs under `env CUDA_VISIBLE_DEVICES=g`,
so candidate code that says `.cuda()` or `device="cuda"` lands on the kernel's GPU without knowing
there are others. A kernel takes the GPU with the fewest kernels in flight, and keeps it for all
its workers (the rescaled pair too), so one kernel's compile cache, inputs and memory stay on one
device."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager


def visible_gpus(count: int | None = None, device_count=None) -> list[str]:
    """The GPU ids this process may hand out, at most `count` of them: CUDA_VISIBLE_DEVICES's
    entries when it is set, else 0..n-1 for the n GPUs torch.cuda.device_count() sees."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip() != "":
        ids = [x.strip() for x in env.split(",") if x.strip()]
    else:
        try:
            if device_count is None:
                import torch

                device_count = torch.cuda.device_count
            n = int(device_count())
        except Exception:  # noqa: BLE001 - no torch or no driver: no GPU to spread over
            n = 0
        ids = [str(k) for k in range(n)]
    return ids if count is None else ids[:count]


class GpuPool:
    """Hands each kernel the GPU with the fewest kernels in flight."""

    def __init__(self, ids: list[str]):
        if not ids:
            raise ValueError("GpuPool: no GPU ids")
        self.ids = list(ids)
        self.in_flight = [0] * len(self.ids)
        self._lock = threading.Lock()

    @contextmanager
    def take(self):
        with self._lock:
            k = min(range(len(self.ids)), key=lambda i: (self.in_flight[i], i))
            self.in_flight[k] += 1
        try:
            yield self.ids[k]
        finally:
            with self._lock:
                self.in_flight[k] -= 1
