"""Warm parents of the audit's worker processes (kcv.worker.forkserver, docs/06 §8).

One server per (role, GPU): the reference role's has run the first meta op too (sizing and
tracing need it), and a candidate's server is never the parent of a reference worker, so a
candidate that tampers with its parent reaches only later candidates. The orchestrator starts
them from its main thread (a server ends with the thread that started it, PR_SET_PDEATHSIG) and
stops them at the end of the run; each server also holds a lifeline (start_with_lifeline), so it
ends with the orchestrator even where the orchestrator is killed as the server starts. Nothing
waits for them: until a server has said `ready`, and for good if it never does, worker_command
gives the plain `python -m kcv.worker` (a cold start), as kcv.worker.spawn does by itself when
its server has gone. Where candidates run in sandboxes
(kcv.sandbox), each kernel's sandbox holds its own candidate server and only the reference's
servers are started here (`roles`)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable

from kcv.audit.workers import worker_command

ROLES = ("reference", "candidate")


def start_with_lifeline(argv_of: Callable[[int], list[str]],
                        **popen) -> tuple[subprocess.Popen, int]:
    """Starts argv_of(fd), fd being the read end of a fresh pipe that only the new process
    inherits (the argv passes it as kcv.worker.forkserver's --lifeline). Returns the process and
    the pipe's write end: the server ends when that end closes, by the caller's os.close or by
    the end of this process."""
    read_end, write_end = os.pipe()  # both close-on-exec: no other child inherits them
    try:
        proc = subprocess.Popen(argv_of(read_end), pass_fds=(read_end,), **popen)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return proc, write_end


class _Server:
    def __init__(self, cmd: list[str], path: str):
        self.path = path
        self.proc, self.lifeline = start_with_lifeline(
            lambda fd: [*cmd, "--lifeline", str(fd)], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.ready = False
        self._said = b""

    def poll_ready(self) -> bool:
        """True once the server printed its "ready" line and while it runs; never blocks. A
        server that died is not ready, so its role's workers start cold rather than from a
        socket nobody answers."""
        if self.proc.poll() is not None:
            self.ready = False
            return False
        if self.ready or self.proc.stdout is None:
            return self.ready
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._said and select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            self._said += chunk
        self.ready = self._said.split(b"\n", 1)[0].strip() == b"ready" and b"\n" in self._said
        return self.ready


class ForkServers:
    def __init__(self, gpus: list[str | None], threads: int | None, roles=ROLES):
        self.threads = threads
        self.dir = tempfile.mkdtemp(prefix="kcv-forkservers-")
        self._lock = threading.Lock()
        self._servers: dict[tuple[str, str | None], _Server] = {}
        for role in roles:
            for gpu in gpus:
                path = os.path.join(self.dir, f"{role}-{gpu if gpu is not None else 'any'}.sock")
                cmd = [sys.executable, "-m", "kcv.worker.forkserver", "--socket", path,
                       "--warm", "meta" if role == "reference" else "torch"]
                if gpu is not None:
                    cmd += ["--gpu", str(gpu)]
                if threads is not None:
                    cmd += ["--threads", str(int(threads))]
                self._servers[(role, gpu)] = _Server(cmd, path)

    def wait_ready(self, timeout_s: float) -> list[str]:
        """Waits up to timeout_s for every server; the ones not ready, described (tests)."""
        import time  # noqa: PLC0415

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if all(s.poll_ready() or s.proc.poll() is not None for s in self._servers.values()):
                    break
            time.sleep(0.05)
        with self._lock:
            return [f"{role} server (GPU {gpu}) is not ready"
                    for (role, gpu), s in self._servers.items() if not s.poll_ready()]

    def running(self) -> bool:
        """True while every server process runs (ready or still warming up)."""
        with self._lock:
            return all(s.proc.poll() is None for s in self._servers.values())

    def pid(self, role: str, gpu: str | None) -> int:
        """The server process of `role` on `gpu` (the parent of its workers)."""
        return self._servers[(role, gpu)].proc.pid

    def command(self, role: str, gpu: str | None) -> list[str]:
        """argv of a worker of `role` on `gpu`: through its server once it is ready, else a
        plain cold start."""
        with self._lock:
            server = self._servers.get((role, gpu))
            ready = server is not None and server.poll_ready()
        if not ready:
            return worker_command(gpu, self.threads)
        return worker_command(gpu, self.threads, socket=server.path)

    def close(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
        for s in servers:
            if s.proc.poll() is None:
                s.proc.terminate()
        for s in servers:
            try:
                s.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()
            if s.proc.stdout:
                s.proc.stdout.close()
            os.close(s.lifeline)
            try:
                os.unlink(s.path)
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
