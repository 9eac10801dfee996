"""The command line of the audit's worker processes (`python -m kcv.worker`, docs/06).

This process never imports reference or candidate code: kcv._core starts the workers with this
command and drives them. `gpu` is the one GPU id a worker sees (CUDA_VISIBLE_DEVICES), `threads`
the size of its CPU thread pools (OMP_NUM_THREADS, MKL_NUM_THREADS): a dozen workers each sized
to the whole host oversubscribe its cores while they draw get_inputs on the CPU. kcv.worker's
__main__ sets both before it imports torch."""

from __future__ import annotations

import sys


def worker_command(gpu: str | None = None, threads: int | None = None,
                   socket: str | None = None) -> list[str]:
    """argv of a Python worker: this interpreter, so the worker sees the same kcv and torch.
    `socket`: started through the warm parent listening there (kcv.worker.spawn), which falls
    back to the plain worker by itself when none answers."""
    cmd = [sys.executable, "-m", "kcv.worker"]
    if socket is not None:
        cmd = [sys.executable, "-m", "kcv.worker.spawn", "--socket", socket]
    if gpu is not None:
        cmd += ["--gpu", str(gpu)]
    if threads is not None:
        cmd += ["--threads", str(int(threads))]
    return cmd
