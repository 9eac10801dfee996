"""`python -m kcv.worker.spawn --socket PATH [--gpu ID] [--threads N]`: a worker process started
through a warm parent (kcv.worker.forkserver, docs/06_worker_protocol.md §8).

kcv starts this as it would start `python -m kcv.worker` (its own process group, an address-space
limit, stdin/stdout the protocol's socket, stderr a pipe). It imports nothing heavy: it hands
its three descriptors, pid, limit, working directory and environment to the fork server, which
forks a worker that takes its place in every way the protocol sees, then waits and ends as that
worker ended (the same exit code, or the same signal), so kcv reads the worker's end from this
process. Where no fork server answers, it becomes the plain worker instead (exec), with the same
arguments: the server only makes a start cheaper, never decides one.
"""

import json
import os
import resource
import signal
import socket
import sys


def _split(argv: list[str]) -> tuple[str | None, list[str]]:
    """(the socket path, the arguments the plain worker takes)."""
    path, rest = None, []
    k = 0
    while k < len(argv):
        if argv[k] == "--socket" and k + 1 < len(argv):
            path = argv[k + 1]
            k += 2
            continue
        rest.append(argv[k])
        k += 1
    return path, rest


def _plain_worker(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "kcv.worker", *args])


def _mirror(line: str) -> None:
    """Ends this process as the worker ended ("exit N" or "signal S")."""
    kind, _, value = line.strip().partition(" ")
    if kind == "signal":
        sig = int(value)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their action cannot be set (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process (SIGCHLD, say)
    os._exit(int(value) if kind == "exit" else 70)


def main(argv: list[str]) -> None:
    path, args = _split(argv)
    if path is None:
        _plain_worker(args)
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    header = {"pid": os.getpid(), "cwd": os.getcwd(), "env": dict(os.environ),
              "rlimit_as": None if limit == resource.RLIM_INFINITY else limit}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(header).encode("utf-8")], [0, 1, 2])
        reply = conn.makefile("r", encoding="utf-8")
        started = reply.readline()
    except OSError:
        started = ""
    if not started.startswith("started "):
        conn.close()
        _plain_worker(args)  # no server, or it refused: a cold start, same process
    for fd in (0, 1):  # the worker holds the protocol's socket now; this process never reads it
        os.close(fd)
    end = reply.readline()
    _mirror(end if end else "signal 9")  # the server died with the worker (PDEATHSIG)


if __name__ == "__main__":
    main(sys.argv[1:])
