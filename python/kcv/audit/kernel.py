"""One kernel of the audit: size it, choose the shape it is judged at, hold its share of host
memory and its GPU, and run kcv._core.verify_module, which makes every verdict (loads, the
reference-shape check, KernelBench's own check, every gate under every profile, shrinking).

The shape: a problem whose inputs + outputs exceed KernelConfig.reduce_over_bytes is judged at a
reduced shape of about reduce_to_bytes (reduced.py), every verdict marked so (evidence
"battery_shape"); at the reference shape such a problem moves gigabytes per call through the
trusted side. What the reduced shape misses: defects that only show at full size (a 32-bit index
overflow, say); the corpus's own verdict (the original), made at the full size, is still
compared. Sizing asks the reference worker alone, on the meta device where it can (sizing.py).

Statuses the orchestrator acts on and the store never sees: `run_alone` (large inputs: run it
again with nothing beside it) and `postponed` (no room in the host-memory budget within
memory_postpone_s: run it again once `host_bytes` fits); stages.Decision names them. Both are
returned, never raised. The kernel's KernelState (stages.py) records the stages it enters.

The candidate's workers run in a sandbox of this kernel (kcv.sandbox.KernelSandbox), opened when
the kernel begins and closed, with everything the candidate started, when it ends. Without one
(KernelConfig.unsandboxed says why) every verdict is marked unsandboxed."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import traceback
from dataclasses import dataclass

from kcv import sandbox as sandbox_mod
from kcv.audit import memory, reduced as reduced_mod
from kcv.audit.gpus import GpuPool
from kcv.audit.sizing import ShapeRefused, size_problem
from kcv.audit.stages import KernelState, Stage
from kcv.audit.workers import worker_command

MESSAGE_LIMIT = 4000


@dataclass(frozen=True)
class KernelConfig:
    """What one kernel's run needs, fixed for the run: derived once from the audit's
    AuditConfig (orchestrator.Auditor) or given to a kcv.ray.Verifier. The handles it carries
    (memory gate, GPU pool, fork servers) are shared objects of the process that runs kernels;
    dataclasses.replace makes a config with other ones."""
    profiles: list
    device: str = "auto"
    cache_dir: str | None = None
    kernel_timeout_s: float = 900.0  # everything after the loads: replica and gates
    load_timeout_s: float = 900.0  # each worker's load, compiles included
    call_timeout_s: float = 120.0
    memory_limit_bytes: int = 0
    alone_input_bytes: int = 0  # larger inputs: the kernel waits for the end and runs alone
    max_input_bytes: int = 0  # larger inputs: status error (host memory), 0: no limit
    memory_gate: memory.MemoryGate | None = None  # host memory shared with the other slots
    gpu_pool: GpuPool | None = None  # several GPUs: each kernel's workers see one of them
    worker_threads: int | None = None  # CPU threads per worker process (None: torch's default)
    forkservers: object = None  # kcv.audit.forkservers.ForkServers: warm starts; None: cold
    memory_postpone_s: float = 30.0
    reduce_over_bytes: int = 0  # larger inputs + outputs: judged at a reduced shape; 0: never
    reduce_to_bytes: int = 128 << 20
    probe_budget_bytes: int = 256 << 20  # shapes other than the judge shape: at most this
    seed: int = 0x6B6376
    shrink: bool = True
    unsandboxed: str | None = None  # why candidates run without a sandbox; None: sandboxed
    shm_dir: str | None = None  # where the workers' call files live (None: /dev/shm)

    def cache(self) -> str:
        """The workers' cache_dir (a sandboxed candidate's scratch is bound at this path)."""
        return self.cache_dir or os.path.join(tempfile.gettempdir(), f"kcv-cache-{os.getuid()}")


def _clip(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def _commands(cfg: KernelConfig, gpu, box=None) -> tuple[list[str], list[str]]:
    """argv of the (reference, candidate) workers of a kernel on `gpu`; `box`: the kernel's
    sandbox, where its candidate workers start."""
    plain = worker_command(gpu, cfg.worker_threads)
    reference = plain if cfg.forkservers is None else cfg.forkservers.command("reference", gpu)
    if box is not None:
        return reference, box.command()
    if cfg.forkservers is None:
        return reference, plain
    return reference, cfg.forkservers.command("candidate", gpu)


def _open_sandbox(cfg: KernelConfig, gpu, row: dict):
    """The kernel's sandbox, its warm parent starting now (None when unsandboxed)."""
    if cfg.unsandboxed is not None:
        return None
    args = worker_command(gpu, cfg.worker_threads)[3:]  # --gpu, --threads
    return sandbox_mod.KernelSandbox(cfg.cache(), args, warm=cfg.forkservers is not None,
                                     code=row["candidate_code"]
                                     if isinstance(row.get("candidate_code"), str) else None,
                                     shm_parent=cfg.shm_dir)


def _choose_shape(row: dict, cfg: KernelConfig, gpu, notes: list,
                  held: contextlib.ExitStack) -> tuple[dict, tuple, dict | None, object]:
    """(the judge shape's constants, its (input, output) bytes, the battery_shape evidence or
    None, the sizing's reference worker for verify_module to adopt or None). A reference that
    does not size is left to verify_module, at the reference shape. Only a shape within
    reduce_over_bytes hands its worker on: there its load is a real one whether or not meta
    sizing runs, so the adopted worker restarts (after a crash) exactly as verify_module's own
    would; every other sizing worker is closed when `held` unwinds."""
    def size(constants, over):
        sized = size_problem(row, device=cfg.device, cache_dir=cfg.cache(), constants=constants,
                             over_bytes=over, gpu=gpu, threads=cfg.worker_threads,
                             memory_limit_bytes=cfg.memory_limit_bytes,
                             timeout_s=cfg.load_timeout_s, keep=True,
                             command=_commands(cfg, gpu)[0], shm_dir=cfg.shm_dir or "")
        held.callback(sized.close)
        return sized

    def handed_on(sized):
        within = not cfg.reduce_over_bytes or sized.io_bytes <= cfg.reduce_over_bytes
        return sized.reference if within else None

    try:
        full = size(None, cfg.reduce_over_bytes)
    except ShapeRefused:
        return {}, (0, 0), None, None
    io = full.io_bytes
    if not cfg.reduce_over_bytes or (io <= cfg.reduce_over_bytes and not full.sized_on_meta):
        return {}, (full.input_bytes, full.output_bytes), None, handed_on(full)

    def try_shape(override, desc):
        small = size(override, cfg.reduce_over_bytes)
        return small, small.io_bytes if not small.sized_on_meta else max(small.io_bytes, cfg.reduce_over_bytes + 1)

    try:
        small, override, small_io = reduced_mod.search(full, io, cfg.reduce_over_bytes,
                                                       cfg.reduce_to_bytes, try_shape, notes,
                                                       drop=lambda s: s.close())
    except reduced_mod.NoReducedShape as e:
        notes.append(f"judged at the reference shape ({io / 2**30:.3g} GiB in + out): {e}")
        return {}, (full.input_bytes, full.output_bytes), None, None
    desc = reduced_mod.describe(override)
    notes.append(f"judged at a reduced shape {desc} ({small_io / 2**20:.1f} MiB in + out; the "
                 f"reference shape's {io / 2**30:.3g} GiB is over {cfg.reduce_over_bytes / 2**30:.3g} "
                 "GiB): replica and gates alike")
    return override, (small.input_bytes, small.output_bytes), {"reduced": desc, "reference_shape_bytes": io,
                                         "reduced_shape_bytes": small_io}, handed_on(small)


def audit_kernel(row: dict, cfg: KernelConfig, timings: dict | None = None, alone: bool = False,
                 may_postpone: bool = False, reservation: memory.Reservation | None = None,
                 state: KernelState | None = None) -> dict:
    """The store outcome dict of one corpus row (kcv._core.Store.record takes it), or the
    orchestrator's `run_alone` / `postponed` (module docstring). `timings` receives wall seconds:
    size, memory_wait, and verify_module's load, replica, gates and total (and build,
    build_cached where the candidate's load ran torch's JIT build); `state` the stages
    entered. An exception here (a bug of ours in sizing, admission or marking) is this kernel's
    `error`, never a stopped audit: with --jobs 1 nothing else would catch it."""
    t = {} if timings is None else timings
    st = state if state is not None else KernelState(str(row.get("id", "")))
    try:
        return _audit_kernel(row, cfg, t, alone, may_postpone, reservation, st)
    except Exception as e:  # noqa: BLE001 - our own fault must not stop the audit
        return {"kernel_id": row.get("id", ""), "status": "error", "replica_verdict": None,
                "verdicts": [], "message": _clip(
                    f"internal error in kcv.audit: {type(e).__name__}: {e}; "
                    f"{traceback.format_exc(limit=3)}")}


def _audit_kernel(row: dict, cfg: KernelConfig, t: dict, alone: bool, may_postpone: bool,
                  reservation: memory.Reservation | None, state: KernelState) -> dict:
    from kcv import _core

    t0 = time.monotonic()
    notes: list[str] = []
    state.enter(Stage.LOAD)
    with contextlib.ExitStack() as held:
        gpu = held.enter_context(cfg.gpu_pool.take()) if cfg.gpu_pool is not None else None
        box = _open_sandbox(cfg, gpu, row)
        if box is not None:
            held.callback(box.close)
        state.enter(Stage.SIZE)
        base, (input_bytes, output_bytes), shape, reference = _choose_shape(row, cfg, gpu, notes,
                                                                           held)
        state.enter(Stage.CHOOSE_SHAPE)
        t["size"] = time.monotonic() - t0
        if cfg.max_input_bytes and input_bytes > cfg.max_input_bytes:
            return {"kernel_id": row["id"], "status": "error", "replica_verdict": None, "verdicts": [],
                    "message": f"get_inputs() makes {input_bytes / 2**30:.1f} GiB of inputs, over "
                               f"--max-input-gb {cfg.max_input_bytes / 2**30:g}"}
        if cfg.alone_input_bytes and input_bytes > cfg.alone_input_bytes and not alone:
            return {"status": "run_alone", "message": f"{input_bytes / 2**30:.1f} GiB of inputs"}
        if cfg.memory_gate is not None and input_bytes:
            need = memory.estimate_host_bytes(input_bytes, output_bytes)
            if not cfg.memory_gate.fits(need) and not alone:
                return {"status": "run_alone",
                        "message": f"about {need / 2**30:.1f} GiB of host memory by estimate"}
            t1 = time.monotonic()
            got = cfg.memory_gate.acquire(
                need, cfg.memory_postpone_s if may_postpone and not alone else None,
                reservation=reservation)
            if isinstance(got, memory.Busy):
                return {"status": "postponed", "host_bytes": got.need,
                        "message": f"host memory: {got.message}"}
            held.callback(got.release)
            t["memory_wait"] = time.monotonic() - t1
        state.enter(Stage.ADMITTED)
        reference_command, candidate_command = _commands(cfg, gpu, box)
        outcome = _core.verify_module(
            row, worker_command=candidate_command, reference_worker_command=reference_command,
            candidate_shm_dir=box.shm_dir if box is not None else cfg.shm_dir or "",
            reference_shm_dir=cfg.shm_dir or "", device=cfg.device,
            cache_dir=cfg.cache(), memory_limit_bytes=cfg.memory_limit_bytes,
            load_timeout_s=cfg.load_timeout_s, call_timeout_s=cfg.call_timeout_s,
            kernel_timeout_s=cfg.kernel_timeout_s, profiles=list(cfg.profiles), seed=cfg.seed,
            base_constants=base, probe_budget_bytes=cfg.probe_budget_bytes, shrink=cfg.shrink,
            size_on_meta_over=cfg.reduce_over_bytes if reference is not None else 0,
            reference=reference, last_attempt=alone)
    for k, v in outcome.pop("timings", {}).items():
        t[k] = v
    state.enter_verified(t)
    if shape is not None:
        reduced_mod.mark(outcome["verdicts"], shape)
        t["reduced"] = 1
    if cfg.unsandboxed is not None:
        sandbox_mod.mark(outcome["verdicts"], cfg.unsandboxed)
        notes.insert(0, f"unsandboxed ({cfg.unsandboxed})")
    outcome["message"] = _clip("; ".join(n for n in notes + [outcome["message"]] if n))
    t["total"] = time.monotonic() - t0
    return outcome
