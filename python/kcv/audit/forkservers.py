"""Warm parents of the audit's worker processes (kcv.worker.forkserver, docs/06 §8).

One server per (role, GPU): the reference role's has run the first meta op too (sizing and
tracing need it), and a candidate's server is never the parent of a reference worker, so a
candidate that tampers with its parent reaches only later candidates. The orchestrator starts
them from its main thread (a server ends with the thread that started it, PR_SET_PDEATHSIG) and
stops them at the end of the run. A server that does not come up leaves its workers to cold
starts: worker_command then gives the plain `python -m kcv.worker`, as kcv.worker.spawn does by
itself when its server has gone."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time

from kcv.audit.workers import worker_command

ROLES = ("reference", "candidate")
READY_S = 180.0  # importing torch on a loaded host


class ForkServers:
    def __init__(self, gpus: list[str | None], threads: int | None):
        self.threads = threads
        self.dir = tempfile.mkdtemp(prefix="kcv-forkservers-")
        self.sockets: dict[tuple[str, str | None], str] = {}
        self.procs: list[subprocess.Popen] = []
        self.pids: dict[tuple[str, str | None], int] = {}
        self.failed: list[str] = []
        pending = []
        for role in ROLES:
            for gpu in gpus:
                path = os.path.join(self.dir, f"{role}-{gpu if gpu is not None else 'any'}.sock")
                cmd = [sys.executable, "-m", "kcv.worker.forkserver", "--socket", path,
                       "--warm", "meta" if role == "reference" else "torch"]
                if gpu is not None:
                    cmd += ["--gpu", str(gpu)]
                if threads is not None:
                    cmd += ["--threads", str(int(threads))]
                p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=False)
                self.procs.append(p)
                self.pids[(role, gpu)] = p.pid
                pending.append(((role, gpu), path, p))
        deadline = time.monotonic() + READY_S
        for key, path, p in pending:  # they import side by side; wait for each "ready"
            if _ready(p, deadline):
                self.sockets[key] = path
            else:
                self.failed.append(f"{key[0]} server (GPU {key[1]}) did not start")
                p.kill()

    def pid(self, role: str, gpu: str | None) -> int:
        """The server process of `role` on `gpu` (the parent of its workers)."""
        return self.pids[(role, gpu)]

    def command(self, role: str, gpu: str | None) -> list[str]:
        """argv of a worker of `role` on `gpu`: through its server, or a plain cold start."""
        path = self.sockets.get((role, gpu))
        if path is None:
            return worker_command(gpu, self.threads)
        return worker_command(gpu, self.threads, socket=path)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
        for path in self.sockets.values():
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


def _ready(p: subprocess.Popen, deadline: float) -> bool:
    """True once the server printed its "ready" line before the deadline."""
    fd = p.stdout.fileno()
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or p.poll() is not None:
            return False
        readable, _, _ = select.select([fd], [], [], left)
        if not readable:
            return False
        chunk = os.read(fd, 64)
        if not chunk:
            return False
        buf += chunk
    return buf.split(b"\n", 1)[0].strip() == b"ready"
