"""`python -m kcv.audit`: read corpora into the store, then audit every unfinished kernel with
N parallel slots.

Each slot is a thread driving its own worker processes (kcv._core.Worker releases the GIL while
a worker runs, and on a GPU machine every worker process is its own CUDA context). The store
records a kernel's verdicts and final status in one transaction, so a killed audit resumes with
`todo()`: kernels that were pending or running are redone, finished ones never. Malformed rows
become `malformed` kernels and the audit goes on. A kernel that ran out of memory is retried
once more at the end, alone (no other slot running), before its status is recorded. A kernel
for which the host-memory budget has no room within KernelConfig.memory_postpone_s gives its
slot up and is postponed: the next slot to come free runs it again, before the queued kernels,
once its estimate fits the memory free then (Auditor._next_kernel); those still waiting when
the queue is done wait for memory as long as it takes.

Poison rows: a kernel left `running` by a run that died (the orchestrator was killed or stopped
while the kernel ran) is a suspect: the next run runs it first, alone, so that a second death
names it; one whose runs died --max-attempts times (attempts, which count runs) is recorded as
`poison` and never run again. A worker killed during its load (`load_killed`) is retried once,
alone at the end; a kernel one of whose workers the out-of-memory killer took (kcv's executor
reads the kernel's oom_kill counts around each worker's life, src/worker/oom_kills.hpp) is
retried the same way and recorded `out_of_memory` when it happens again.

Rows: the corpora are read by the C++ reader (kcv._core.read_corpora, the rules of
`kcv corpus-check`): a malformed row, a row that is not UTF-8 and every later row with an id
already seen (a warning names both) become `malformed` kernels. A row whose content hash
differs from the one its verdicts judged (an edit under the same id) is judged again
(--stale reaudit) or kept and counted as stale (--stale keep). The store refuses to be resumed
when it fails verification, and a run stops (exit 2) as soon as the store's schema holds
anything that is not kcv's."""

from __future__ import annotations

import gc
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from kcv import sandbox
from kcv.audit.kernel import KernelConfig, audit_kernel
from kcv.audit.forkservers import ForkServers
from kcv.audit.gpus import GpuPool
from kcv.audit.memory import MemoryGate, Reservation
from kcv.audit.memory_ledger import Ledger
from kcv.audit.progress import Progress
from kcv.audit.stages import Decision, KernelState, Stage

# What judged the verdicts of a run (the runs table): the C++ pipeline of src/kernelbench.
GENERATOR_VERSION = "kcv.pipeline/2 (src/kernelbench: plans from traced facts, fp64 ModelOracle, findings)"


class AuditRefused(Exception):
    """The audit cannot run on this store as asked (the message says why and what to do)."""


class StoreTampered(AuditRefused):
    """The store's schema was changed under the run (a trigger, a view, an unknown object): the
    run stops before it writes another row."""


def open_store(path: str, key_dir: str = ""):
    """The store opened for writing, or AuditRefused with one line saying why not (a path that
    cannot be opened, a file that is not a store, a store that fails verification)."""
    from kcv import _core

    try:
        return _core.Store(path, key_dir=key_dir or "")
    except _core.Error as e:
        raise AuditRefused(f"--store {path!r}: {' '.join(str(e).split())}") from None


@dataclass(frozen=True)
class KernelRun:
    """What one run of a kernel hands back to the scheduler: the outcome dict (the store's
    record, or the scheduling statuses `run_alone` / `postponed` of kernel.py), the decision it
    carries (stages.Decision), the stages it entered with their times (stages.KernelState) and
    wall seconds by step. Picklable: a Ray actor returns it to the driver, which alone writes
    the store."""
    outcome: dict
    timings: dict
    decision: Decision = Decision.RECORD
    stages: tuple = ()  # ((stage name, seconds since the kernel began), ...)


def run_kernel(row: dict, cfg: KernelConfig, alone: bool = False, may_postpone: bool = False,
               reservation: Reservation | None = None) -> KernelRun:
    """One kernel through kernel.audit_kernel."""
    timings: dict = {}
    state = KernelState(str(row.get("id", "")))
    outcome = audit_kernel(row, cfg, timings, alone=alone, may_postpone=may_postpone,
                           reservation=reservation, state=state)
    return KernelRun(outcome, timings, Decision.of(outcome), state.record())


def check_store_generator(store):
    """Refuses to add verdicts to a store judged by another generator: its report would mix two
    verifiers' verdicts in one set of rates."""
    other = sorted(set(store.verdict_generators()) - {GENERATOR_VERSION})
    if other:
        raise AuditRefused(f"the store's verdicts were judged by {', '.join(other)}; this kcv judges "
                           f"with {GENERATOR_VERSION}. Use a fresh --store.")


@dataclass(frozen=True)
class AuditConfig:
    """The audit's configuration: built once from the command line (`__main__.main`: every
    default derived there), never changed afterwards. Each kernel sees the part it needs as a
    KernelConfig (kernel.py), derived from this once per run (Auditor.__init__)."""
    corpora: list
    store: str
    shard: str = "0/1"
    jobs: int = 1
    limit: int | None = None
    ids: list | None = None
    kernel_timeout_s: float = 900.0
    load_timeout_s: float = 900.0
    call_timeout_s: float = 120.0
    cache_dir: str | None = None
    device: str = "auto"
    profiles: list = field(default_factory=lambda: ["strict", "pytorch-eager"])
    progress: bool = True
    memory_limit_bytes: int = 0
    command_line: str = ""
    timings_path: str | None = None  # JSON lines: per-kernel wall times (bench/)
    time_limit_s: float | None = None  # start no kernel after this many seconds
    alone_input_bytes: int = 1 << 30
    max_input_bytes: int = 0
    host_memory_bytes: int = 0  # the slots' shared host-memory budget (memory.py); 0: none
    host_memory_ledger: tuple | None = None  # (file, row): the budget shared with other processes
    gpus: list | None = None  # GPU ids to spread kernels over (gpus.py); None or one: no spreading
    worker_threads: int | None = None  # CPU threads per worker process
    defer_alone: bool = False  # leave run-alone kernels to the --procs launcher (parallel.py)
    progress_events: bool = False  # progress as JSON lines, for the --procs launcher
    all_alone: bool = False  # every kernel as a deferred one: in turn, with nothing beside it
    reduce_over_bytes: int = 1 << 30  # KernelConfig.reduce_over_bytes (kernel.py); 0: never
    reduce_to_bytes: int = 128 << 20
    warm_workers: bool = True  # workers forked from warm parents (forkservers.py); False: cold
    max_attempts: int = 2  # runs that may die while a kernel runs before it is `poison`
    stale: str = "reaudit"  # a row edited under its id: "reaudit" (judge it again) or "keep"
    key_dir: str = ""  # where the store's key is (kcv._core.Store); "": the default
    shm_dir: str | None = None  # the workers' call files (KernelConfig.shm_dir); None: /dev/shm


def kernel_info(row: dict) -> dict:
    return {
        "kernel_id": row["id"],
        "corpus": row["corpus"],
        "level": int(row["level"]),
        "problem_id": int(row["problem_id"]),
        "problem_name": row["problem_name"],
        "language": row["language"],
        "op_class": "",  # from the traced reference, once judged (the outcome's op_class)
        "determinism_declared": True,
        "original_verdict": row.get("original_verdict"),
        "row_hash": row.get("row_hash", ""),
    }


def shard_list(shard: str) -> list[str]:
    """--shard's shards in the order given: "0/4,0/2" is shard 0/4, then the rest of 0/2."""
    return [s for s in shard.split(",") if s]


def read_rows(opts: AuditConfig, store, run_id: int, corpora: set | None = None) -> list[dict]:
    """Valid rows of every corpus (in the shards, filtered by --ids, cut at --limit); malformed
    rows (a duplicate id among them, with a warning) are recorded as they are found, unless the
    store holds the same row final already. Each row carries `shard_rank`: the index in
    --shard's list of the first shard that holds it. `corpora` collects the corpus of every
    row read, malformed ones included."""
    from kcv import _core

    wanted = set(opts.ids) if opts.ids else None
    rows: list[dict] = []
    malformed: set[tuple] = set()  # (file, line): a row with no id is still its own row
    seen: set[tuple] = set()  # (file, line) of the valid rows: a shard list reads a row again
    existing = None
    for rank, shard in enumerate(shard_list(opts.shard)):
        good, bad = _core.read_corpora(list(opts.corpora), shard)
        for e in bad:
            where = (e["file"], e["line"])
            if (wanted is not None and e["id"] not in wanted) or where in malformed:
                continue
            malformed.add(where)
            if corpora is not None:
                corpora.add(e["corpus"])
            if e["duplicate"]:
                print(f"kcv audit: warning: {e['file']}:{e['line']}: duplicate id {e['id']!r} "
                      f"(the row at {e['duplicate']} has it); recorded as malformed kernel "
                      f"{e['kernel_id']!r}", file=sys.stderr, flush=True)
            if existing is None:
                existing = {k["kernel_id"]: k for k in store.kernels()}
            have = existing.get(e["kernel_id"])
            if have is not None and have["status"] not in ("pending", "running"):
                if have["row_hash"] == e["row_hash"]:
                    continue  # recorded by an earlier run: the same line
                if opts.stale == "keep" and have["row_hash"]:
                    if have["seen_hash"] != e["row_hash"]:
                        store.mark_stale(e["kernel_id"], e["row_hash"])
                    continue
            store.record_malformed(e["file"], e["line"], e["id"], e["message"], e["corpus"],
                                   run_id, e["row_hash"], e["duplicate"])
        for r in good:
            where = (r["file"], r["line"])
            if where in seen or (wanted is not None and r["id"] not in wanted):
                continue
            seen.add(where)
            rows.append({**r, "shard_rank": rank})
    if corpora is not None:
        corpora.update(r["corpus"] for r in rows)
    return rows if opts.limit is None else rows[: opts.limit]


def judged_again(opts: AuditConfig, store, rows: list[dict]) -> list[str]:
    """Final kernels whose row changed since it was judged (another content hash under the same
    id): reset to pending (--stale reaudit) or marked stale (--stale keep); a row changed back
    loses its stale mark. Returns the ids reset."""
    existing = {k["kernel_id"]: k for k in store.kernels()}
    reset = []
    for r in rows:
        k = existing.get(r["id"])
        if k is None or k["status"] in ("pending", "running") or not k["row_hash"]:
            continue  # new, unfinished, or judged before rows were hashed
        if k["row_hash"] == r["row_hash"]:
            if k["seen_hash"]:
                store.mark_stale(r["id"], "")
            continue
        if opts.stale == "keep":
            if k["seen_hash"] != r["row_hash"]:
                store.mark_stale(r["id"], r["row_hash"])
        else:
            store.reset(r["id"], r["row_hash"])
            reset.append(r["id"])
    return reset


def order_todo(rows: list[dict]) -> list[dict]:
    """The rows to do, shard by shard in --shard's order (shard_rank), each shard round-robin
    over the corpora (interleave_corpora)."""
    ranks = sorted({r.get("shard_rank", 0) for r in rows})
    return [r for k in ranks for r in interleave_corpora([x for x in rows
                                                          if x.get("shard_rank", 0) == k])]


def interleave_corpora(rows: list[dict]) -> list[dict]:
    """Round-robin over the corpora, each in its own order: a run that --time-limit cuts short
    has then covered every corpus about equally, not the first corpus in id order only."""
    queues: dict[str, list[dict]] = {}
    for r in rows:
        queues.setdefault(r["corpus"], []).append(r)
    out: list[dict] = []
    for k in range(max((len(q) for q in queues.values()), default=0)):
        out.extend(q[k] for q in queues.values() if k < len(q))
    return out


@dataclass
class Postponed:
    """A kernel that found no room in the host-memory budget."""
    row: dict
    host_bytes: int  # its estimate, which did not fit
    running: bool = False  # a slot runs it again


def _kcv_version() -> str:
    try:
        from kcv import _core

        return str(_core.version)
    except Exception:  # noqa: BLE001
        return "unknown"


class Auditor:
    def __init__(self, opts: AuditConfig):
        from kcv import _core

        self.opts = opts
        self.store = open_store(opts.store, opts.key_dir)
        box = sandbox.support()
        self.cfg = KernelConfig(profiles=list(opts.profiles), device=opts.device,
                                cache_dir=opts.cache_dir, kernel_timeout_s=opts.kernel_timeout_s,
                                load_timeout_s=opts.load_timeout_s,
                                call_timeout_s=opts.call_timeout_s,
                                memory_limit_bytes=opts.memory_limit_bytes,
                                alone_input_bytes=opts.alone_input_bytes,
                                max_input_bytes=opts.max_input_bytes,
                                memory_gate=self._memory_gate(opts),
                                gpu_pool=(GpuPool(opts.gpus) if opts.gpus and len(opts.gpus) > 1
                                          else None),
                                worker_threads=opts.worker_threads,
                                shm_dir=opts.shm_dir,
                                reduce_over_bytes=opts.reduce_over_bytes,
                                reduce_to_bytes=opts.reduce_to_bytes,
                                unsandboxed=None if box["available"] else box["reason"])
        self.retry_alone: list[dict] = []
        self.queue: deque[dict] = deque()  # kernels no slot has taken yet
        self.postponed: dict[str, Postponed] = {}  # by kernel id, the first postponed first
        self._lock = threading.Lock()
        self.progress: Progress | None = None
        self.run_id = 0
        self.selected: set[str] = set()  # the ids this command selects (begin() fills it)
        self.corpora: set[str] = set()  # the corpora of the rows read (the summary's)
        self.suspects: list[dict] = []  # left running by a run that died: run first, alone
        self.stop: AuditRefused | None = None  # set when the store was tampered with mid-run
        self.started = time.monotonic()

    def _out_of_time(self) -> bool:
        limit = self.opts.time_limit_s
        return limit is not None and time.monotonic() - self.started > limit

    def _audit_one(self, row: dict, may_retry: bool, may_postpone: bool = False,
                   reservation: Reservation | None = None) -> str:
        if self._out_of_time():
            return "skipped"  # stays pending (running, if postponed): the next run does it
        if self.stop is not None:
            return "skipped"
        t0 = self._start_kernel(row)
        run = run_kernel(row, self.cfg, alone=not may_retry, may_postpone=may_postpone,
                         reservation=reservation)
        return self._finish_kernel(row, run, t0, may_retry)

    def _start_kernel(self, row: dict) -> float:
        """Marks the kernel running in the store (its attempt counted); returns its start time."""
        t0 = time.monotonic()
        self._store_write(self.store.mark_running, row["id"], self.run_id)
        return t0

    def _finish_kernel(self, row: dict, run: KernelRun, t0: float, may_retry: bool) -> str:
        """What the scheduler does with a kernel's run, wherever it ran (a local slot or a Ray
        actor, kcv/ray.py): postpone it, set it aside to run alone, or record its outcome in
        the store. Returns the status (or the scheduling decision) for the slot."""
        outcome, timings = run.outcome, run.timings
        if run.decision is Decision.POSTPONE:
            # A heavy kernel waiting for memory held a slot (and its loaded workers) while the
            # lighter kernels behind it could have run: on the H200 30 slots held such kernels
            # with the host 90 % idle. It runs again once its estimate fits (its build is cached).
            need = outcome["host_bytes"]
            with self._lock:  # postponed again, it keeps its place
                again = self.postponed.setdefault(row["id"], Postponed(row, need))
                again.host_bytes, again.running = need, False
            self.progress.message(f"kcv audit: {row['id']}: no room for {need / 2**30:.1f} GiB "
                                  "of host memory; runs again when memory frees")
            return "postponed"
        retry = outcome.get("out_of_memory") or outcome["status"] == "load_killed"
        if run.decision is Decision.RUN_ALONE or (may_retry and retry):
            why = ("large inputs" if run.decision is Decision.RUN_ALONE else
                   "out of memory" if outcome.get("out_of_memory") else
                   "a worker was killed during its load")
            if self.opts.defer_alone:  # the launcher runs it once every process has finished
                self.progress.deferred(row["id"], why)
                return "deferred"
            with self._lock:
                self.retry_alone.append(row)
            self.progress.message(f"kcv audit: {row['id']}: {why}; runs alone at the end")
            return "retry"
        outcome.pop("out_of_memory", None)
        if outcome["status"] == "out_of_memory":
            outcome["message"] = ("also when run alone: " + outcome["message"])[:4000]
        elif outcome["status"] == "load_killed":
            outcome["message"] = ("a worker was killed (SIGKILL, from outside kcv) during its "
                                  "load, also when run alone: " + outcome["message"])[:4000]
        outcome["row_hash"] = row.get("row_hash", "")
        self._store_write(self.store.record, outcome, self.run_id)
        self._log_timings(row, outcome, {**timings, "stage": (run.stages[-1][0] if run.stages
                                                              else Stage.LOAD.value)})
        note = f"replica {outcome['replica_verdict']}" if outcome["replica_verdict"] else ""
        failed = sorted({v["gate"] for v in outcome["verdicts"] if v["verdict"] == "fail"})
        if failed:
            note += (", " if note else "") + "fails " + ",".join(failed)
        self.progress.kernel_done(row["id"], outcome["status"], time.monotonic() - t0, note)
        return outcome["status"]

    def _store_write(self, write, *args):
        """A store write; a failure while the store's schema holds anything that is not kcv's
        (a trigger, a view: what a candidate that reached the file would leave) stops the run."""
        from kcv import _core

        try:
            return write(*args)
        except _core.Error as e:
            try:
                problems = self.store.schema_problems()
            except _core.Error:
                problems = []
            if not problems:
                raise
            self.stop = StoreTampered(
                f"--store {self.opts.store!r}: the store was changed during the run "
                f"({'; '.join(problems)}); nothing more is written to it "
                "(`kcv report --untrusted` shows what it holds)")
            raise self.stop from e

    @staticmethod
    def _memory_gate(opts: AuditConfig) -> MemoryGate | None:
        if opts.host_memory_bytes <= 0:
            return None
        ledger = Ledger(*opts.host_memory_ledger) if opts.host_memory_ledger else None
        return MemoryGate(opts.host_memory_bytes, ledger=ledger)

    def _next_kernel(self) -> tuple[dict, bool, Reservation | None] | None:
        """Under the lock: the next kernel for a free slot, whether it may be postponed, and the
        memory reserved for it. The oldest postponed kernel whose estimate fits the memory free
        now, its room reserved at once (so that slots freed while it loads do not count the same
        bytes), else the next queued one, else (the queue done) the oldest postponed one, which
        then waits for memory as long as it takes. None when nothing is left to take: a kernel
        postponed again goes back to the postponed ones, and its slot loops on."""
        gate = self.cfg.memory_gate
        waiting = [p for p in self.postponed.values() if not p.running]
        for p in waiting:
            reservation = gate.reserve(p.host_bytes) if gate is not None else None
            if reservation is not None:
                p.running = True
                return p.row, bool(self.queue), reservation
        if self.queue:
            return self.queue.popleft(), True, None
        if waiting:
            waiting[0].running = True
            return waiting[0].row, False, None
        return None

    def _audit_guarded(self, row: dict, may_retry: bool, may_postpone: bool = False,
                       reservation: Reservation | None = None) -> str:
        """_audit_one, where an error of ours around the kernel (the store, the progress display)
        is reported and the kernel is left pending for the next run, its attempt given back (this
        run did not die of it); a tampered store still stops the run."""
        try:
            return self._audit_one(row, may_retry, may_postpone, reservation)
        except StoreTampered:
            raise
        except Exception as e:  # noqa: BLE001 - one kernel's failure must not stop the run
            self.progress.message(f"kcv audit: {row['id']}: internal error around it: "
                                  f"{type(e).__name__}: {e}; left for the next run")
            try:
                self.store.release_running(self.run_id, row["id"])
            except Exception:  # noqa: BLE001 - it stays running: a suspect next time
                pass
            return "error"

    def _slot(self):
        """One of the --jobs slots: runs kernels until none is left to take. An error of ours
        around one kernel (the store, the progress display) is reported and the slot goes on;
        the kernel stays `running` in the store, which the next run redoes."""
        while True:
            with self._lock:
                job = self._next_kernel()
            if job is None:
                return
            row, may_postpone, reservation = job
            status = "error"
            try:
                status = self._audit_guarded(row, True, may_postpone, reservation)
            except StoreTampered:
                with self._lock:  # no slot takes another kernel
                    self.queue.clear()
                    self.postponed.clear()
                return
            finally:
                if reservation is not None:
                    reservation.release()  # a no-op once its hold consumed it
            if status != "postponed":
                with self._lock:
                    self.postponed.pop(row["id"], None)

    def _log_timings(self, row: dict, outcome: dict, timings: dict):
        if not self.opts.timings_path:
            return
        line = json.dumps({"kernel_id": row["id"], "status": outcome["status"],
                           "language": row["language"], "jobs": self.opts.jobs,
                           **{k: round(v, 4) if isinstance(v, float) else v
                              for k, v in timings.items()}})
        with self._lock, open(self.opts.timings_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def begin(self, generator: str) -> list[dict]:
        """Starts this run in the store (refusing a store judged under another error scale),
        reads the corpora into it and returns the rows to do, round-robin over the corpora;
        sets up the progress display."""
        o = self.opts
        check_store_generator(self.store)
        self.run_id = self.store.begin_run({
            "kcv_version": _kcv_version(), "generator_version": generator, "seed": 42,
            "profiles": list(o.profiles), "command_line": o.command_line, "shard": o.shard})
        rows = read_rows(o, self.store, self.run_id, self.corpora)
        reset = judged_again(o, self.store, rows)
        self.store.enqueue([kernel_info(r) for r in rows])
        by_id = {r["id"]: r for r in rows}
        self.selected = set(by_id)
        poisoned = self._poison_and_suspects(by_id)
        suspect_ids = {r["id"] for r in self.suspects}
        todo = order_todo([by_id[k] for k in self.store.todo()
                           if k in by_id and k not in suspect_ids])
        self.progress = Progress(len(todo) + len(self.suspects), enabled=o.progress,
                                 events=o.progress_events)
        if reset:
            self.progress.warning(f"kcv audit: {len(reset)} row(s) changed since they were "
                                  "judged; judged again (--stale reaudit): "
                                  + ", ".join(reset[:5]) + (" ..." if len(reset) > 5 else ""))
        for kid, attempts in poisoned:
            self.progress.warning(f"kcv audit: {kid}: the orchestrator died {attempts} times "
                                  "while it ran; recorded as poison, not run again")
        if self.suspects:
            self.progress.warning(f"kcv audit: {len(self.suspects)} kernel(s) were running when "
                                  "a run died; each runs first, alone: "
                                  + ", ".join(sorted(suspect_ids)))
        if self.cfg.unsandboxed is not None:
            print(
                f"kcv audit: WARNING: candidates run UNSANDBOXED ({self.cfg.unsandboxed}): a "
                "candidate can read and write the store and signal this process; every verdict of "
                "this run is marked unsandboxed (docs/10_threat_model.md)", file=sys.stderr,
                flush=True)
        return todo

    def _poison_and_suspects(self, by_id: dict) -> list[tuple[str, int]]:
        """Kernels of this command left `running` by a run that died: recorded as `poison` once
        --max-attempts runs died with them, else suspects (self.suspects) to run first, alone.
        Returns the (id, attempts) recorded as poison."""
        poisoned = []
        for k in self.store.kernels():
            kid = k["kernel_id"]
            if kid not in by_id or k["status"] != "running" or k["attempts"] < 1:
                continue
            if k["attempts"] >= self.opts.max_attempts:
                self._store_write(self.store.record, {
                    "kernel_id": kid, "status": "poison", "replica_verdict": None, "verdicts": [],
                    "row_hash": by_id[kid].get("row_hash", ""),
                    "message": f"the orchestrator died {k['attempts']} time(s) while this kernel "
                               f"ran (--max-attempts {self.opts.max_attempts}): a kernel that "
                               "kills or stops the process auditing it is not run again"},
                    self.run_id)
                poisoned.append((kid, k["attempts"]))
            else:
                self.suspects.append(by_id[kid])
        return poisoned

    def end(self) -> dict:
        """Closes this run: the time-limit message, the run's end in the store, the summary."""
        if self._out_of_time():
            self.progress.message(f"kcv audit: --time-limit reached; {self.left()} "
                                  "kernel(s) left for the next run (same command)")
        self.progress.finish()
        self.store.finish_run(self.run_id)
        return self.summary(self.corpora)

    def run(self) -> dict:
        o = self.opts
        todo = self.begin(GENERATOR_VERSION)
        if o.warm_workers and todo:
            gpus = self.cfg.gpu_pool.ids if self.cfg.gpu_pool is not None else [None]
            roles = ("reference",) if self.cfg.unsandboxed is None else ("reference", "candidate")
            self.cfg = replace(self.cfg, forkservers=ForkServers(  # not waited for
                gpus, self.cfg.worker_threads, roles))
        try:
            return self._run(todo)
        finally:
            if self.cfg.forkservers is not None:
                self.cfg.forkservers.close()
                self.cfg = replace(self.cfg, forkservers=None)

    def _run(self, todo: list[dict]) -> dict:
        o = self.opts
        if self.cfg.gpu_pool is not None:
            self.progress.message(f"kcv audit: kernels spread over GPUs "
                                  f"{','.join(self.cfg.gpu_pool.ids)}")
        for row in self.suspects:  # nothing else runs beside a suspect
            self._audit_guarded(row, may_retry=not o.all_alone)
        if o.all_alone:
            for row in todo:
                self._audit_guarded(row, may_retry=False)
        elif o.jobs <= 1:
            for row in todo:
                self._audit_guarded(row, may_retry=True)
        else:
            self.queue.extend(todo)
            with ThreadPoolExecutor(max_workers=o.jobs, thread_name_prefix="kcv-slot") as pool:
                slots = [pool.submit(self._slot) for _ in range(o.jobs)]
                for slot in slots:
                    slot.result()
        if self.stop is not None:
            raise self.stop
        for row in self.retry_alone:  # every other slot has finished: this one runs alone
            self._audit_guarded(row, may_retry=False)
        return self.end()

    def summary(self, corpora: set[str]) -> dict:
        """Statuses and replica verdicts of every kernel of these corpora (the rows' own corpus
        field, not their files' names) in the store."""
        counts: dict[str, int] = {}
        replica: dict[str, int] = {}
        for k in self.store.kernels():
            if k["corpus"] not in corpora:
                continue
            counts[k["status"]] = counts.get(k["status"], 0) + 1
            if k.get("replica_verdict"):
                replica[k["replica_verdict"]] = replica.get(k["replica_verdict"], 0) + 1
        return {"run_id": self.run_id, "statuses": counts, "replica": replica,
                "left": self.left(), "corpora": sorted(corpora),
                "sandbox": "bwrap" if self.cfg.unsandboxed is None
                else f"off: {self.cfg.unsandboxed}"}

    def left(self) -> int:
        """Kernels this command selects (shards, --ids, --limit) that the store has not finished:
        what running the same command again would do, not every unfinished row of the store."""
        return sum(1 for k in self.store.todo() if k in self.selected)


def _release_on_stop(auditor: Auditor):
    """SIGTERM and SIGINT (a deadline's `timeout`, Ctrl-C) give back the attempts of the kernels
    in flight (Store.release_running: this run's and its --procs children's) before the process
    ends as the signal says: a run stopped on purpose must not make its kernels suspects, let
    alone poison. SIGKILL, or death by any other signal, counts them. Returns the function
    that puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum, _frame):
        try:
            if auditor.run_id and auditor.store is not None:
                auditor.store.release_running(auditor.run_id)
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore():
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def with_command_line(opts: AuditConfig) -> AuditConfig:
    """opts with the command line that runs this audit (the runs table's), where none is set."""
    if opts.command_line:
        return opts
    return replace(opts, command_line=shlex.join([sys.executable, "-m", "kcv.audit",
                                                  *sys.argv[1:]]))


def run_audit(opts: AuditConfig, procs: int = 1, auditor: Auditor | None = None) -> dict:
    """Runs the audit in this process, or with procs > 1 across that many orchestrator
    processes (parallel.py), or with the Auditor given (kcv.ray's, whose kernels run on Ray)."""
    opts = with_command_line(opts)
    if auditor is not None:
        pass
    elif procs > 1:
        from kcv.audit.parallel import ParallelAuditor

        auditor = ParallelAuditor(opts, procs)
    else:
        auditor = Auditor(opts)
    restore = _release_on_stop(auditor)
    try:
        return auditor.run()
    finally:
        restore()
        # Close the store now (its destructor checkpoints the WAL into the .db file), not at
        # interpreter exit: a copied audit.db then holds everything.
        auditor.store = None
        gc.collect()
