"""`python -m kcv.worker.forkserver --socket PATH [--gpu ID] [--threads N]`: a warm parent of
worker processes (docs/06_worker_protocol.md §8).

A worker spends most of a small kernel's time importing: torch, and on the reference side the
~400 modules of the first meta op. This process does that once, with no CUDA context (a CUDA
context does not survive fork), then forks one worker per request of kcv.worker.spawn. The
worker it forks is the plain `python -m kcv.worker` process in every way the protocol sees: the
spawn client's stdin, stdout and stderr, its process group (so kcv's kill of the group reaches
the worker), its address-space limit, its working directory and environment, and its end (the
client exits as the worker did: same code, or same signal).

The loop is single-threaded (fork in a threaded process is unsafe) and waits on the listening
socket, on the workers' pidfds and on the clients' connections: a worker that ends is reported
to its client, and a client that ends (kcv killed it, or died: its connection closes) takes its
worker with it (SIGKILL). When this process ends, its workers get SIGKILL too
(PR_SET_PDEATHSIG). The orchestrator keeps one server per worker role, so a candidate can reach
only the parent of later candidates, never of a reference worker.

`--lifeline FD`: the read end of a pipe whose write end only the launcher holds. When the
launcher ends, however it ends, the pipe reads end-of-file and the server ends with its workers.
PR_SET_PDEATHSIG alone misses two cases: a launcher killed between the fork and the prctl (in
bwrap's own start, or before main() here), and a sandboxed server, whose parent is bwrap's
reaper inside the sandbox rather than the launcher.

`--sandboxed`: the server runs inside a kernel's sandbox (kcv.sandbox, docs/10_threat_model.md),
in a PID namespace of its own, where the client's pid, process group, working directory and
environment mean nothing or must not pass: its workers keep the server's process group,
environment (the sandbox's) and directory (/tmp), and only the client's descriptors and
address-space limit cross.
"""

import ctypes
import gc
import json
import os
import selectors
import signal
import socket
import sys

PR_SET_PDEATHSIG = 1
HEADER_LIMIT = 1 << 20
_libc = ctypes.CDLL(None, use_errno=True)


def _options(argv: list[str]) -> dict:
    known = {"--socket": "socket", "--gpu": "gpu", "--threads": "threads", "--warm": "warm",
             "--lifeline": "lifeline"}
    out = {}
    k = 0
    while k < len(argv):
        if argv[k] == "--sandboxed":
            out["sandboxed"] = True
            k += 1
            continue
        key = known.get(argv[k])
        if key is None or k + 1 >= len(argv):
            sys.exit(f"kcv.worker.forkserver: unknown argument {argv[k]!r} (known: {', '.join(known)})")
        out[key] = argv[k + 1]
        k += 2
    if "socket" not in out:
        sys.exit("kcv.worker.forkserver: --socket PATH is required")
    return out


def _warm_up(warm: str) -> None:
    """Imports what every worker imports; `meta` also runs the first meta op (the reference's
    sizing and tracing need it). Nothing here touches CUDA."""
    import torch  # noqa: F401, PLC0415

    from kcv.worker import calls, candidate, problem, serve  # noqa: F401, PLC0415

    if warm == "meta":
        from kcv.worker import meta  # noqa: PLC0415

        meta.warm_up_meta()
    if torch.cuda.is_initialized():  # a forked child could not use CUDA: serve nobody
        sys.exit("kcv.worker.forkserver: CUDA was initialised while warming up")
    # The imports' objects out of the collector's sight, in this process and in every worker it
    # forks: a collection there scans only what the worker makes (and the pages of the frozen
    # objects stay shared with this parent instead of being written by the collector).
    gc.freeze()


def _read_request(conn: socket.socket):
    """(header dict, [stdin, stdout, stderr] fds) of one spawn request."""
    data, fds, _, _ = socket.recv_fds(conn, HEADER_LIMIT, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected 3 descriptors, got {len(fds)}")
    return json.loads(data.decode("utf-8")), fds


def _become_worker(header: dict, fds: list[int], close: list[int], fixed_env: dict,
                   sandboxed: bool) -> None:
    """In the forked child: take the client's place and serve the protocol; never returns."""
    try:
        for fd in close:
            os.close(fd)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if not sandboxed:
            os.setpgid(0, os.getpgid(header["pid"]))  # kcv kills the client's group: this too
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        limit = header.get("rlimit_as")
        if limit is not None:
            import resource  # noqa: PLC0415

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if not sandboxed:
            os.chdir(header.get("cwd") or "/")
            os.environ.clear()
            os.environ.update(header.get("env") or {})
        else:
            os.chdir("/tmp")
        os.environ.update(fixed_env)  # what the imports already took: the server's GPU, threads
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.argv = ["kcv.worker"]
        from kcv.worker.channel import protect  # noqa: PLC0415
        from kcv.worker.serve import main  # noqa: PLC0415

        main(protect())
    except BaseException as e:  # noqa: BLE001 - a child of the server must never return into its loop
        os.write(2, f"kcv.worker.forkserver: the worker could not start: {e!r}\n".encode())
    os._exit(70)


def _status_line(status: int) -> bytes:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}\n".encode()
    return f"exit {os.waitstatus_to_exitcode(status)}\n".encode()


class Server:
    def __init__(self, path: str, fixed_env: dict, sandboxed: bool = False,
                 lifeline: int | None = None):
        self.fixed_env = fixed_env
        self.sandboxed = sandboxed
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        os.chmod(path, 0o600)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.lifeline = lifeline
        if lifeline is not None:  # readable only once the launcher's end has closed
            self.selector.register(lifeline, selectors.EVENT_READ, ("lifeline", None))
        self.workers = {}  # worker pid -> (conn, worker pidfd)

    def serve(self) -> None:
        """Serves until the launcher ends (the lifeline reads end-of-file)."""
        while True:
            for key, _ in self.selector.select():
                kind, pid = key.data
                if kind == "lifeline":
                    return
                if kind == "accept":
                    self.accept()
                elif kind == "worker":
                    self.worker_ended(pid)
                else:
                    self.client_ended(pid)

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            header, fds = _read_request(conn)
            if not self.sandboxed:
                os.kill(int(header["pid"]), 0)  # a client of this PID namespace, still there
        except (OSError, ValueError, KeyError, TypeError) as e:
            conn.sendall(f"refused {e}\n".encode()[:1000])
            conn.close()
            return
        others = [self.listener.fileno(), conn.fileno()]
        if self.lifeline is not None:
            others.append(self.lifeline)
        for w_conn, w_fd in self.workers.values():
            others += [w_conn.fileno(), w_fd]
        pid = os.fork()
        if pid == 0:
            self.selector.close()
            _become_worker(header, fds, others, self.fixed_env, self.sandboxed)
        for fd in fds:
            os.close(fd)
        worker_pidfd = os.pidfd_open(pid)
        self.workers[pid] = (conn, worker_pidfd)
        self.selector.register(worker_pidfd, selectors.EVENT_READ, ("worker", pid))
        # the client never writes after its request: readable means its end of the connection
        # closed, i.e. the client process ended
        self.selector.register(conn, selectors.EVENT_READ, ("client", pid))
        # a pid of the sandbox's own namespace would name another process outside it: 0
        conn.sendall(f"started {0 if self.sandboxed else pid}\n".encode())

    def worker_ended(self, pid: int) -> None:
        _, status = os.waitpid(pid, 0)
        conn, worker_pidfd = self.workers.pop(pid)
        self.selector.unregister(worker_pidfd)
        os.close(worker_pidfd)
        if conn.fileno() in self.selector.get_map():
            self.selector.unregister(conn)
        try:
            conn.sendall(_status_line(status))
        except OSError:
            pass  # the client is gone already
        conn.close()

    def client_ended(self, pid: int) -> None:
        conn, _ = self.workers[pid]
        self.selector.unregister(conn)
        try:
            os.kill(pid, signal.SIGKILL)  # reaped when its pidfd reports the end
        except ProcessLookupError:
            pass


def main(argv: list[str]) -> int:
    options = _options(argv)
    fixed_env = {}
    if "gpu" in options:
        fixed_env["CUDA_VISIBLE_DEVICES"] = options["gpu"]
    if "threads" in options:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MAX_JOBS"):
            fixed_env[name] = options["threads"]
    os.environ.update(fixed_env)  # before torch is imported, which is when they take effect
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the orchestrator that started it is gone
    # listening before the imports: a client that connects meanwhile waits in the backlog for
    # its worker instead of starting one cold
    lifeline = int(options["lifeline"]) if "lifeline" in options else None
    server = Server(options["socket"], fixed_env, sandboxed=options.get("sandboxed", False),
                    lifeline=lifeline)
    _warm_up(options.get("warm", "torch"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    try:
        server.serve()
    finally:
        for pid in list(server.workers):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
