"""The sandbox of candidate workers (docs/10_threat_model.md; the decision: docs/decisions/0002).

Every kernel's candidate runs in a bubblewrap sandbox of its own (kcv._core.sandbox_argv builds
the argument list; kcv makes no namespace system call itself): new user, PID, mount, IPC,
network, UTS and cgroup namespaces, no capabilities, no nested user namespaces. Its file system
is the system's programs and libraries, the Python installation and kcv's package read-only, a
private /tmp, and read-write only two directories of this kernel: its scratch (compile caches,
build trees, the fork server's socket), bound at the load's cache_dir, and its call-file
directory under /dev/shm. The GPU device nodes are bound in. The store, the orchestrator's
files, the shared build cache and every other process are out of its reach.

A kernel's sandbox holds a warm parent of its candidate workers (kcv.worker.forkserver
--sandboxed), started when the kernel begins so that its imports overlap the reference's
sizing. close() kills the sandbox's PID 1, which takes every process inside with it (nothing a
candidate started outlives its kernel), and removes both directories.

Builds: given the candidate's code, the sandbox copies the build-cache entries published for
that code text into the scratch before the sandbox starts, and publishes the entries the
candidate finished when it closes, after its warm parent is killed (kcv.buildcache:
restore, publish; filed under the hash of the code text kcv holds, so what a candidate leaves
in its scratch reaches only later runs of the same text; copied through directory descriptors
without following links, so nothing still running in there can lead the copy outside it).

Where no sandbox can be started (no bwrap, no user namespaces) or KCV_SANDBOX=off, support()
says why; the audit then runs candidates as before and marks every verdict of the run
unsandboxed (mark()).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from kcv import buildcache

SCRATCH_PREFIX = "kcv-sandbox-"
UNSANDBOXED_KEY = "unsandboxed"  # the evidence key of a verdict judged without a sandbox


def support() -> dict:
    """{available, bwrap, reason} (kcv._core.sandbox_support: probed once per process)."""
    from kcv import _core

    return dict(_core.sandbox_support())


#: Directories no sandbox may see, os.pathsep-separated: set by the audit to its store's
#: directory and its key directory (kcv.audit, kcv.ray forwards it to its actors).
HIDE_ENV = "KCV_SANDBOX_HIDE"


def hide(paths: list[str]) -> None:
    """Keeps `paths` (and everything under them) out of every sandbox this process, its
    children and its Ray actors start."""
    known = [p for p in os.environ.get(HIDE_ENV, "").split(os.pathsep) if p]
    os.environ[HIDE_ENV] = os.pathsep.join(dict.fromkeys(
        known + [os.path.realpath(p) for p in paths if p]))


def _hidden() -> list[str]:
    """What a read-only bind must not expose: the hidden directories and the sandbox's own
    /tmp (a bind of /tmp or of an ancestor would put the host's /tmp over its private one)."""
    return [p for p in os.environ.get(HIDE_ENV, "").split(os.pathsep) if p] + ["/tmp"]


def _exposes(path: str, hidden: list[str]) -> bool:
    path = os.path.realpath(path).rstrip("/") + "/"
    return any((h.rstrip("/") + "/").startswith(path) for h in hidden)


def python_paths() -> list[str]:
    """What a Python worker reads: the interpreter's prefixes, every absolute sys.path and
    PYTHONPATH entry, and the directories of the kcv package (source and built modules). Left
    out: the working directory (`python -m` puts it first on sys.path; the worker needs it not)
    and any path that holds a hidden directory or /tmp."""
    import kcv

    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    cwd = os.path.realpath(os.getcwd())
    paths += [p for p in sys.path if os.path.isabs(p) and os.path.realpath(p) != cwd]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)]
    paths += [os.path.dirname(p) for p in kcv.__path__]
    hidden = _hidden()
    seen, out = set(), []
    for p in paths:
        if p and p not in seen and os.path.exists(p) and not _exposes(p, hidden):
            seen.add(p)
            out.append(p)
    return out


def library_paths() -> list[str]:
    """LD_LIBRARY_PATH's absolute entries (a CUDA toolkit outside /usr, say), but those that
    hold a hidden directory or /tmp."""
    hidden = _hidden()
    return [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
            if os.path.isabs(p) and os.path.exists(p) and not _exposes(p, hidden)]


def argv(command: list[str], scratch: str, shm_dir: str, cache_dir: str) -> list[str]:
    """bwrap argv running `command` in a kernel's sandbox: `scratch` bound read-write at
    `cache_dir` (where the worker's load puts its compile caches) and `shm_dir` at itself."""
    from kcv import _core

    return _core.sandbox_argv(
        command, read_only=python_paths() + library_paths(),
        writable=[(scratch, cache_dir), (shm_dir, shm_dir)],
        devices=_core.gpu_device_nodes(), env=dict(_core.sandbox_environment()), workdir="/tmp")


def _private_dir(parent: str, prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    os.chmod(path, 0o700)
    return path


class KernelSandbox:
    """One kernel's sandbox: its directories and the warm parent of its candidate workers.

    `cache_dir`: the path the candidate's load names as its cache_dir (the scratch is bound
    there; on the host, the shared build cache). `worker_args`: what the plain worker takes
    (--gpu, --threads). `code`: the candidate's code text, whose published builds the scratch
    starts with and receives back at close (None: no build is shared). `shm_parent`: where its
    private call-file directory is made (None: /dev/shm, else the temporary directory)."""

    def __init__(self, cache_dir: str, worker_args: list[str], warm: bool = True,
                 code: str | None = None, shm_parent: str | None = None):
        self.cache_dir = cache_dir
        self.code = code
        self.scratch = _private_dir(tempfile.gettempdir(), SCRATCH_PREFIX)
        self.restored = buildcache.restore(cache_dir, code, self.scratch) if code else []
        if shm_parent is None:
            shm_parent = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        self.shm_dir = _private_dir(shm_parent, SCRATCH_PREFIX)
        self.socket = os.path.join(cache_dir, "forkserver.sock")  # the path inside
        self._host_socket = os.path.join(self.scratch, "forkserver.sock")
        self.worker_args = list(worker_args)
        self.server = None
        self._lifeline = None
        if warm:
            from kcv.audit.forkservers import start_with_lifeline  # noqa: PLC0415

            # bwrap's --die-with-parent misses a launcher killed while bwrap starts; the
            # lifeline (a pipe the server watches through bwrap) ends the server then too
            self.server, self._lifeline = start_with_lifeline(
                lambda fd: argv([sys.executable, "-m", "kcv.worker.forkserver", "--socket",
                                 self.socket, "--warm", "torch", "--sandboxed", "--lifeline",
                                 str(fd), *self.worker_args],
                                self.scratch, self.shm_dir, cache_dir),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)

    def command(self) -> list[str]:
        """argv of a candidate worker: forked by this kernel's server, or (no server answers)
        started cold in a sandbox like it."""
        cold = argv([sys.executable, "-m", "kcv.worker", *self.worker_args], self.scratch,
                    self.shm_dir, self.cache_dir)
        if self.server is None:
            return cold
        return [sys.executable, "-m", "kcv.worker.spawn", "--socket", self._host_socket,
                *self.worker_args, "--", *cold]

    def close(self) -> None:
        if self.server is not None:
            try:
                os.killpg(self.server.pid, signal.SIGKILL)  # bwrap; its PID 1 takes the rest
            except ProcessLookupError:
                pass
            self.server.wait()
            self.server = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if self.code is not None and os.path.isdir(self.scratch):
            try:
                buildcache.publish(self.scratch, self.cache_dir, self.code)
            except OSError:  # the shared cache not writable: the next run builds again
                pass
            self.code = None
        for d in (self.scratch, self.shm_dir):
            shutil.rmtree(d, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def mark(verdicts: list, reason: str) -> None:
    """Every verdict judged without a sandbox says so in its evidence (key "unsandboxed")."""
    for r in verdicts:
        ev = json.loads(r.get("evidence_json") or "{}")
        ev[UNSANDBOXED_KEY] = reason
        r["evidence_json"] = json.dumps(ev, sort_keys=True)
