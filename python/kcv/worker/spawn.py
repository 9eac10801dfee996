"""`python -m kcv.worker.spawn --socket PATH [--gpu ID] [--threads N]`: a worker process started
through a warm parent (kcv.worker.forkserver, docs/06_worker_protocol.md §8).

kcv starts this as it would start `python -m kcv.worker` (its own process group, an address-space
limit, stdin/stdout the protocol's socket, stderr a pipe). It imports nothing heavy: it hands
its three descriptors, pid, limit, working directory and environment to the fork server, which
forks a worker that takes its place in every way the protocol sees, then waits and ends as that
worker ended (the same exit code, or the same signal), so kcv reads the worker's end from this
process. Where no fork server answers, it becomes the plain worker instead (exec), with the same
arguments: the server only makes a start cheaper, never decides one. Arguments after `--` are
the command of that cold start instead (a sandboxed worker's: its sandbox and the plain worker,
kcv.sandbox), so a candidate that ends its server is started again in a sandbox all the same.
"""

import json
import os
import resource
import select
import signal
import socket
import sys
import time

SOCKET_WAIT_S = 3.0
WATCH_S = 0.2


def _split(argv: list[str]) -> tuple[str | None, list[str], list[str] | None]:
    """(the socket path, the arguments the plain worker takes, the cold-start command or
    None)."""
    path, rest, cold = None, [], None
    if "--" in argv:
        cut = argv.index("--")
        argv, cold = argv[:cut], argv[cut + 1:]
    k = 0
    while k < len(argv):
        if argv[k] == "--socket" and k + 1 < len(argv):
            path = argv[k + 1]
            k += 2
            continue
        rest.append(argv[k])
        k += 1
    return path, rest, cold


def _plain_worker(args: list[str], cold: list[str] | None = None) -> None:
    if cold:
        os.execv(cold[0], cold)
    os.execv(sys.executable, [sys.executable, "-m", "kcv.worker", *args])


def _mirror(line: str) -> None:
    """Ends this process as the worker ended ("exit N" or "signal S")."""
    kind, _, value = line.strip().partition(" ")
    if kind == "signal":
        sig = int(value)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # neither can be caught, nor reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process (SIGCHLD, say)
    os._exit(int(value) if kind == "exit" else 70)


def _connect(conn: socket.socket, path: str) -> None:
    """Connects, giving a server that was started a moment ago (a kernel's sandbox) up to
    SOCKET_WAIT_S to create its socket."""
    deadline = time.monotonic() + SOCKET_WAIT_S
    while True:
        try:
            return conn.connect(path)
        except FileNotFoundError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _line(conn: socket.socket) -> str:
    """One line from the server, read a byte at a time: nothing past it is taken from the
    socket, so select() on it later sees the next line arrive."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace")


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def _watch(conn: socket.socket, pid: int) -> None:
    """Until the server reports the worker's end: a worker stopped by a signal (SIGSTOP, a
    tracer) is killed, says so on stderr, and this process dies of the same SIGKILL, so kcv
    records a crash at once instead of waiting out the call's deadline (kcv's own watchdog sees
    only this process)."""
    while not select.select([conn], [], [], WATCH_S)[0]:
        if _stopped(pid):
            os.write(2, f"kcv.worker.spawn: the worker (pid {pid}) was stopped by a signal; "
                        "killed\n".encode())
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            # Ends at once as the worker did, rather than after the server's report: kcv reaps
            # this process when the worker's socket closes and gives it only a moment.
            _mirror(f"signal {int(signal.SIGKILL)}")


def main(argv: list[str]) -> None:
    path, args, cold = _split(argv)
    if path is None:
        _plain_worker(args, cold)
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    header = {"pid": os.getpid(), "cwd": os.getcwd(), "env": dict(os.environ),
              "rlimit_as": None if limit == resource.RLIM_INFINITY else limit}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _connect(conn, path)
        socket.send_fds(conn, [json.dumps(header).encode("utf-8")], [0, 1, 2])
        started = _line(conn)
    except OSError:
        started = ""
    if not started.startswith("started "):
        conn.close()
        _plain_worker(args, cold)  # no server, or it refused: a cold start, same process
    for fd in (0, 1):  # the worker holds the protocol's socket now; this process never reads it
        os.close(fd)
    worker = (started.split()[1:] or ["0"])[0]
    if worker.isdigit() and int(worker) > 0:
        _watch(conn, int(worker))
    try:
        end = _line(conn)
    except OSError:
        end = ""
    _mirror(end if end else "signal 9")  # the server died with the worker (PDEATHSIG)


if __name__ == "__main__":
    main(sys.argv[1:])
