"""`kcv audit --procs P`: one audit run by P orchestrator processes on one store.

Why processes: one orchestrator drives its slots from threads of one interpreter and one address
space; its Python work (reading rows, admission, the store) takes turns on the interpreter's lock
and every call maps its shared-memory regions in the one process. P processes each have their
own.

The launcher (this process) reads the corpora into the store and takes the kernels to do, as
`kcv audit` does, then deals them round-robin to P child processes (`python -m kcv.audit ...
--ids ...`), each with its share of the slots and one GPU (CUDA_VISIBLE_DEVICES, in turn over
the visible GPUs). The host-memory budget stays one: the children's memory gates count each
other's holdings through a ledger file (memory_ledger.py), which the launcher creates and, as a
child exits, clears of that child's row. The children write to the same store:
SQLite in WAL mode serialises their transactions, and every kernel belongs to exactly one child,
so resuming after a kill works as it does with one process. A child reports each finished kernel
as a JSON line on stderr (progress.py's events), which the launcher turns into one progress
display. Kernels a child finds too large to run beside others are deferred to the launcher, which
runs them in one last child with one slot, the whole budget and every GPU, after the others.
Suspects (kernels a dead run left running, orchestrator.py) run before everything, in a child of
their own with one slot: alone, so that a run dying again names its kernel."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from kcv.audit.memory_ledger import Ledger
from kcv.audit.orchestrator import GENERATOR_VERSION, AuditConfig, Auditor

_GIB = float(1 << 30)


def die_with_parent():
    """Called by a child at its start (--progress-events): SIGKILL when the launcher dies
    (PR_SET_PDEATHSIG = 1). In the child itself rather than a preexec_fn, which would run
    between fork and exec of a launcher that has threads and native libraries loaded."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class ParallelAuditor(Auditor):
    def __init__(self, opts: AuditConfig, procs: int):
        super().__init__(opts)
        self.procs = int(procs)
        self.deferred: list[str] = []
        self._deferred_lock = threading.Lock()
        self.failed_processes = 0

    # -- the children ------------------------------------------------------------------------

    def child_command(self, ids: list[str], jobs: int, host_gb: float, defer: bool,
                      time_limit_s: float | None, ledger_row: str | None = None) -> list[str]:
        """A child's argv; defer=False: the last child, which runs its kernels alone;
        ledger_row: FILE:ROW of the budget it shares with its siblings."""
        o = self.opts
        cmd = [sys.executable, "-m", "kcv.audit", *o.corpora, "--store", o.store,
               "--shard", o.shard, "--jobs", str(jobs),
               "--kernel-timeout", repr(o.kernel_timeout_s),
               "--load-timeout", repr(o.load_timeout_s),
               "--call-timeout", repr(o.call_timeout_s),
               "--device", o.device, "--profiles", ",".join(o.profiles),
               "--max-attempts", str(o.max_attempts), "--stale", o.stale,
               "--memory-limit-gb", repr(o.memory_limit_bytes / _GIB),
               "--alone-input-gb", repr(o.alone_input_bytes / _GIB),
               "--max-input-gb", repr(o.max_input_bytes / _GIB),
               "--host-memory-gb", repr(host_gb),
               "--progress-events"]
        if o.cache_dir:
            cmd += ["--cache-dir", o.cache_dir]
        if o.shm_dir:
            cmd += ["--shm-dir", o.shm_dir]
        if o.worker_threads:
            cmd += ["--worker-threads", str(o.worker_threads)]
        cmd += ["--reduce-over-gb", repr(o.reduce_over_bytes / _GIB),
                "--reduce-to-gb", repr(o.reduce_to_bytes / _GIB)]
        if o.timings_path:
            cmd += ["--timings", o.timings_path]
        if o.key_dir:
            cmd += ["--key-dir", o.key_dir]
        if not o.warm_workers:
            cmd.append("--cold-workers")
        if time_limit_s is not None:
            cmd += ["--time-limit", repr(max(time_limit_s, 1e-3))]
        if ledger_row is not None:
            cmd += ["--host-memory-ledger", ledger_row]
        cmd.append("--defer-alone" if defer else "--all-alone")
        return cmd + ["--ids", *ids]

    def _forward(self, k: int, stream):
        """A child's stderr: its JSON events into this progress display, other lines as they
        are (a child's own error, say)."""
        for line in stream:
            try:
                self._forward_line(k, line.rstrip("\n"))
            except Exception as e:  # noqa: BLE001 - a reader that dies would block its child
                print(f"kcv audit [process {k}]: unreadable event {line!r}: {e}", file=sys.stderr)

    def _forward_line(self, k: int, line: str):
        if not line:
            return
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if not isinstance(ev, dict) or "event" not in ev:
            # a child's own error (a traceback, say): shown even with --no-progress
            print(f"kcv audit [process {k}]: {line}", file=sys.stderr, flush=True)
        else:
            self._event(ev, line)

    def _event(self, ev: dict, line: str):
        if ev["event"] == "kernel_done":
            self.progress.kernel_done(ev.get("id", "?"), ev.get("status", "?"),
                                      float(ev.get("seconds", 0.0)), ev.get("note", ""))
        elif ev["event"] == "deferred":
            with self._deferred_lock:
                self.deferred.append(ev.get("id", ""))
            self.progress.message(f"kcv audit: {ev.get('id')}: {ev.get('why')}; runs alone "
                                  "at the end")
        elif ev["event"] == "warning":
            self.progress.warning(str(ev.get("text", line)))
        else:
            self.progress.message(str(ev.get("text", line)))

    @staticmethod
    def _reap(k: int, proc: subprocess.Popen, ledger: str | None):
        proc.wait()
        if ledger:
            Ledger.clear(ledger, k)

    def _run_children(self, plans: list[tuple[list[str], int, float, bool, str | None]],
                      ledger: str | None = None):
        """Runs one child per plan (ids, jobs, host GB, defer, GPU id or None: all) at once and
        waits for all of them; with a ledger file, child k holds its row k and the row is zeroed
        when the child exits."""
        limit = None
        if self.opts.time_limit_s is not None:
            limit = self.opts.time_limit_s - (time.monotonic() - self.started)
            if limit <= 0:
                return
        children = []
        for k, (ids, jobs, host_gb, defer, gpu) in enumerate(plans):
            env = dict(os.environ)
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            row = f"{ledger}:{k}" if ledger else None
            proc = subprocess.Popen(self.child_command(ids, jobs, host_gb, defer, limit, row), env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, errors="replace")
            children.append(proc)
        readers = [threading.Thread(target=self._forward, args=(k, p.stderr), daemon=True)
                   for k, p in enumerate(children)]
        # A child's row is cleared as soon as that child exits, whatever the order: a killed
        # child's holdings would otherwise keep its siblings waiting for room, and the launcher
        # waiting for them.
        waiters = [threading.Thread(target=self._reap, args=(k, p, ledger), daemon=True)
                   for k, p in enumerate(children)]
        for t in readers + waiters:
            t.start()
        for k, (proc, reader, waiter) in enumerate(zip(children, readers, waiters)):
            waiter.join()
            reader.join()
            rc = proc.returncode
            if rc != 0:
                self.failed_processes += 1
                print(f"kcv audit: process {k} exited with status {rc}; its unfinished kernels "
                      "stay in the store for the next run", file=sys.stderr, flush=True)

    def run(self) -> dict:
        o = self.opts
        todo = [r["id"] for r in self.begin(
            f"{GENERATOR_VERSION}; launcher of {self.procs} processes")]
        if self.suspects:  # first, one at a time, in a child of their own
            self._run_children([([r["id"] for r in self.suspects], 1,
                                 o.host_memory_bytes / _GIB if o.host_memory_bytes else 0.0,
                                 False, o.gpus[0] if o.gpus else None)])
        procs = max(1, min(self.procs, len(todo), o.jobs))  # never more slots than --jobs
        gpus = o.gpus if o.gpus else [None]
        plans = []
        host_gb = o.host_memory_bytes / _GIB if o.host_memory_bytes else 0.0
        for k in range(procs):
            jobs = o.jobs // procs + (1 if k < o.jobs % procs else 0)
            plans.append((todo[k::procs], max(1, jobs), host_gb, True, gpus[k % len(gpus)]))
        if todo:
            self.progress.message(f"kcv audit: {len(todo)} kernel(s) over {procs} processes"
                                  + (f", GPUs {','.join(g for g in gpus if g)}"
                                     if gpus != [None] else "")
                                  + (f"; one budget of {host_gb:.1f} GB of host memory shared "
                                     "by them" if o.host_memory_bytes else ""))
            if o.host_memory_bytes:
                fd, ledger = tempfile.mkstemp(prefix="kcv-memory-ledger-")
                os.close(fd)
                try:
                    Ledger.create(ledger, procs)
                    self._run_children(plans, ledger)
                finally:
                    os.unlink(ledger)
            else:
                self._run_children(plans)
        if self.deferred:  # the visible GPUs only (--gpus), one slot, the whole budget
            self._run_children([(list(self.deferred), 1, host_gb, False,
                                 ",".join(o.gpus) if o.gpus else None)])
        out = self.end()
        out["failed_processes"] = self.failed_processes
        return out
