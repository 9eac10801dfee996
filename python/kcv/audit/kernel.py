"""Auditing one kernel: start its worker pair, run the replica and the gate battery, and turn
whatever happened into one store outcome (status, message, replica verdict, verdicts).

Every failure is data (STYLE 14): a load failure maps to its status (statuses.py), a candidate
call that times out or keeps crashing ends the battery with the verdicts judged so far, a load
(compiles included) that runs past --load-timeout or probes that run past --kernel-timeout
(counted from the end of the load) end it as `timeout`, and a failing trusted reference is `error` with the
reference's message. Even a bug of ours becomes `error` for this kernel only, never a stopped
audit.

A problem whose inputs + outputs exceed KernelConfig.reduce_over_bytes (`kcv audit
--reduce-over-gb`) is judged at a reduced shape (reduced.py): the pair at the reference shape
tells the sizes (and makes the builds), then closes, and a pair at the reduced shape runs
everything, replica and battery alike, so the differential compares the two checks on the same
inputs; every verdict is marked with the shape (evidence "battery_shape") and the kernel's
message says so. At the reference shape such a kernel moves gigabytes per call through the
trusted side, and did not finish in the H200 audit (docs/audit/README.md, "The big problems").
What the reduced shape misses: defects that only show at full size (a 32-bit index overflow,
say); the corpus's own verdict (the original), made at the full size, is still compared."""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass

from kcv.audit import memory
from kcv.audit.gpus import GpuPool
from kcv.audit import replica as replica_mod
from kcv.audit import reduced as reduced_mod
from kcv.audit import rescale
from kcv.audit.battery import Battery, StopBattery
from kcv.audit.session import (KernelTimeout, Limits, LoadFailure, LoadTimeout, ProblemSession,
                               ReferenceFailure)

MESSAGE_LIMIT = 4000


@dataclass
class KernelConfig:
    profiles: list
    device: str = "auto"
    cache_dir: str | None = None
    kernel_timeout_s: float = 900.0  # everything after the load: warm-up, replica, battery
    load_timeout_s: float = 900.0  # the workers' loads, compiles included
    call_timeout_s: float = 120.0
    memory_limit_bytes: int = 0
    alone_input_bytes: int = 0  # larger inputs: the kernel waits for the end and runs alone
    max_input_bytes: int = 0  # larger inputs: status error (host memory), 0: no limit
    memory_gate: memory.MemoryGate | None = None  # host memory shared with the other slots
    gpu_pool: GpuPool | None = None  # several GPUs: each kernel's workers see one of them
    worker_threads: int | None = None  # CPU threads per worker process (None: torch's default)
    error_scale: str = "global"  # error_model.ERROR_SCALES: one E per output, or per binade
    # How long a kernel that may be postponed (audit_kernel's may_postpone) waits for room in the
    # host-memory budget before it gives its slot up (the orchestrator runs it again when its
    # estimate fits).
    memory_postpone_s: float = 30.0
    # Larger inputs + outputs: the kernel is judged (replica and battery) at a reduced shape of
    # about reduce_to_bytes (module docstring); 0: every kernel at its own shape.
    reduce_over_bytes: int = 0
    reduce_to_bytes: int = 128 << 20


class RunAlone(Exception):
    """The kernel's inputs are large: run it later, with no other slot running."""


def _clip(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def _warm_up(session: ProblemSession):
    """One untimed, unjudged call of each kind first: Triton JIT compiles and autotunes on its
    first call, cuBLAS/cuDNN initialise on theirs. Without this the replica's first trial would
    carry those costs and the battery/replica timing would flatter the battery. A candidate
    that hangs here ends the kernel as timeout."""
    seed = replica_mod.trial_seeds()[0]
    x = session.inputs(seed)
    session.reference32(x, key=seed)  # memoised: the battery's first probe reuses both runs
    session.reference64(x, key=seed)
    rec = session.run_candidate(x, plain_buffers=True)
    if rec.status == "timeout":
        raise StopBattery("timeout", f"candidate call timed out (warm-up): {rec.message}")


def audit_kernel(row: dict, cfg: KernelConfig, timings: dict | None = None,
                 alone: bool = False, may_postpone: bool = False,
                 reservation: memory.Reservation | None = None) -> dict:
    """The KernelOutcome dict of one corpus row (see kcv._core.Store.record). Status `run_alone`
    (not a store status): run it again with alone=True once nothing else runs; `postponed` (not
    one either; only with may_postpone): the host-memory budget had no room for it within
    cfg.memory_postpone_s, so it gave its slot up: run it again once `host_bytes` (its
    estimate, in the outcome only then) fits; `reservation` is the room the orchestrator set
    aside for that run, which the hold consumes. `timings`, when
    given, receives wall seconds: load (both workers, compiles included), warmup (first calls:
    Triton JIT and autotuning, library initialisation), replica, battery
    (without waiting for the rescaled pair's load, which overlaps the replica), rescale_load,
    memory_wait (for room in the host-memory budget) and total: the benchmark's figures; and
    cost_* (Battery.costs: wall seconds per kind of worker request and in the judges, plus
    those of the pairs closed on the way to a reduced shape); for a kernel judged at a reduced
    shape also reduced (1) and reduced_load (the reduced pairs' starts), and sized_on_meta (1)
    where the reference shape was only sized, on meta."""
    t = {} if timings is None else timings
    t0 = time.monotonic()
    load_deadline = t0 + cfg.load_timeout_s
    limits = Limits(deadline=load_deadline, call_timeout_s=cfg.call_timeout_s,
                    memory_limit_bytes=cfg.memory_limit_bytes, load_deadline=load_deadline,
                    load_timeout_s=cfg.load_timeout_s)

    held = contextlib.ExitStack()  # the kernel's GPU and share of host memory, released at the end
    gpu = held.enter_context(cfg.gpu_pool.take()) if cfg.gpu_pool is not None else None

    def make_session(constants=None, label="", size_on_meta_over=0):
        return ProblemSession(row, limits, device=cfg.device, cache_dir=cfg.cache_dir,
                              constants=constants, label=label, gpu=gpu,
                              threads=cfg.worker_threads, size_on_meta_over=size_on_meta_over)

    def check_size(size: int):
        """The limits on one set of inputs, at the shape the kernel is judged at."""
        if cfg.max_input_bytes and size > cfg.max_input_bytes:
            raise ReferenceFailure(f"get_inputs() makes {size / 2**30:.1f} GiB of inputs, over "
                                   f"--max-input-gb {cfg.max_input_bytes / 2**30:g} (the trusted "
                                   "side holds several copies)")
        if cfg.alone_input_bytes and size > cfg.alone_input_bytes and not alone:
            raise RunAlone(f"{size / 2**30:.1f} GiB of inputs")

    def reduce(full: ProblemSession, battery: Battery, io: int):
        """(the battery on a started pair at a reduced shape, its battery_shape evidence), or
        (a battery at the reference shape on a pair started again, None) where no reduced shape
        works. `full` (the reference shape's pair, which told the sizes and made the builds; its
        reference perhaps only sized the problem on meta) is closed first."""
        first, why = rescale.reduce(row.get("reference_code", ""), full.problem.constants,
                                    io / max(1, cfg.reduce_to_bytes))
        constants, size = dict(full.problem.constants), full.input_bytes()
        given_up.append(full)
        full.close()
        battery.close()

        def make_fresh(constants=None, label=""):
            """A pair with a load window of its own: each try loads anew."""
            limits.load_deadline = time.monotonic() + cfg.load_timeout_s
            return make_session(constants, label)

        def again_at_reference_shape(why: str):
            notes.append(f"judged at the reference shape ({io / 2**30:.2f} GiB in + out): {why}")
            check_size(size)
            again = make_fresh()
            given_up.append(again)  # until it has started: then its costs are the battery's
            t1 = time.monotonic()
            try:
                again.start_both()
            except BaseException:
                again.close()
                raise
            t["load"] = t.get("load", 0.0) + time.monotonic() - t1
            given_up.remove(again)
            return Battery(again, row, cfg.profiles, make_session=make_session,
                           error_scale=cfg.error_scale), None

        # `full` is not kept even where its reference ran for real: its load request carries
        # size_on_meta_over, and a worker restarted mid-battery sizes anew; one whose meta
        # forward ran past its time limit the first time could come back only sized.
        if first is None:
            return again_at_reference_shape(f"no reduced shape: {why}")
        t1 = time.monotonic()
        try:
            small, override, small_io = reduced_mod.start(
                row, constants, io, cfg.reduce_over_bytes, cfg.reduce_to_bytes, make_fresh,
                notes, given_up)
        except reduced_mod.NoReducedShape as e:
            return again_at_reference_shape(str(e))
        finally:
            t["reduced_load"] = time.monotonic() - t1
        desc = reduced_mod.describe(override)
        notes.append(f"judged at a reduced shape {desc} ({small_io / 2**20:.1f} MiB in + out; "
                     f"the reference shape's {io / 2**30:.2f} GiB is over "
                     f"{cfg.reduce_over_bytes / 2**30:g} GiB): replica and battery alike")

        def make_reduced(constants=None, label=""):
            return make_session({**override, **(constants or {})}, label)

        return (Battery(small, row, cfg.profiles, make_session=make_reduced,
                        error_scale=cfg.error_scale, base_constants=override),
                {"reduced": desc, "reference_shape_bytes": io, "reduced_shape_bytes": small_io})

    outcome = {"kernel_id": row["id"], "status": "ok", "message": "", "replica_verdict": None,
               "verdicts": []}
    # Over the reduction limit the reference only sizes the problem, on meta: no draw and no run
    # at a reference shape of gigabytes that the reduced shape never needs.
    session = make_session(size_on_meta_over=cfg.reduce_over_bytes)
    battery = None
    shape = None  # the reduced shape the battery ran at, if it did (evidence "battery_shape")
    given_up: list[ProblemSession] = []  # pairs closed on the way to a reduced shape (costs)
    notes: list[str] = []
    try:
        battery = Battery(session, row, cfg.profiles, make_session=make_session,
                          error_scale=cfg.error_scale)
        try:
            session.start_both()
            t["load"] = time.monotonic() - t0
        except LoadFailure as e:
            if e.role == "candidate":
                outcome["replica_verdict"] = "rejected"  # KernelBench's check fails on it too
            raise
        io = session.input_bytes() + session.output_bytes()
        if session.problem.sized_on_meta:
            t["sized_on_meta"] = 1
        if session.problem.sized_on_meta or (cfg.reduce_over_bytes and io > cfg.reduce_over_bytes):
            battery, shape = reduce(session, battery, io)
            session = battery.s
        size = session.input_bytes()
        check_size(size)
        if cfg.memory_gate is not None:
            need = memory.estimate_host_bytes(size, session.output_bytes())
            if not cfg.memory_gate.fits(need) and not alone:
                raise RunAlone(f"about {need / 2**30:.1f} GiB of host memory by estimate, more "
                               f"than the {cfg.memory_gate.capacity / 2**30:.1f} GiB budget")
            t1 = time.monotonic()
            held.enter_context(cfg.memory_gate.hold(
                need, cfg.memory_postpone_s if may_postpone and not alone else None,
                reservation=reservation))
            t["memory_wait"] = time.monotonic() - t1
        # The rescaled pair loads only now, beside the replica, with a load timeout of its own:
        # its candidate compiles the same source into the same extension directory, and two
        # loads of one extension at once failed on the H200 ("cannot open shared object file").
        # Now it finds the build done.
        limits.load_deadline = time.monotonic() + cfg.load_timeout_s
        battery.prestart_rescale()
        limits.start_running(cfg.kernel_timeout_s)  # the rescaled pair keeps load_deadline
        session.keep_seeds = set(replica_mod.trial_seeds()[:2])
        t1 = time.monotonic()
        _warm_up(session)
        t["warmup"] = time.monotonic() - t1
        t1 = time.monotonic()
        try:
            rep = replica_mod.run_replica(session)
            outcome["replica_verdict"] = rep.verdict
            if rep.verdict == "rejected":
                notes.append(f"replica rejected: {rep.reason}")
        except ReferenceFailure as e:
            notes.append(f"replica not run: {e}")
        t["replica"] = time.monotonic() - t1
        t2 = time.monotonic()
        battery.run()
        t["battery"] = time.monotonic() - t2 - battery.rescale_wait_s
        t["rescale_load"] = battery.rescale_load_s
        outcome["status"] = battery.kernel_status
        notes = battery.status_messages + notes
    except RunAlone as e:
        outcome["status"] = "run_alone"
        notes.insert(0, str(e))
    except memory.MemoryBusy as e:
        outcome["status"] = "postponed"
        outcome["host_bytes"] = e.need
        notes.insert(0, f"host memory: {e}")
    except LoadFailure as e:
        outcome["status"] = e.status
        notes.insert(0, str(e))
    except StopBattery as e:
        outcome["status"] = e.status
        msgs = battery.status_messages if battery is not None else []
        notes = msgs + ([] if e.message in msgs else [e.message]) + notes
    except LoadTimeout as e:
        outcome["status"] = "timeout"
        notes.insert(0, str(e))
    except KernelTimeout as e:
        outcome["status"] = "timeout"
        notes.insert(0, f"kernel time limit of {cfg.kernel_timeout_s:g} s (after the load) "
                        f"reached: {e}")
    except ReferenceFailure as e:
        outcome["status"] = "error"
        notes.insert(0, str(e))
    except Exception as e:  # noqa: BLE001 - our own fault must not stop the audit
        outcome["status"] = "error"
        notes.insert(0, f"internal error in kcv.audit: {type(e).__name__}: {e}; "
                        f"{traceback.format_exc(limit=3)}")
    finally:
        try:
            if battery is not None:
                battery.close()
            session.close()
        finally:
            held.close()  # whatever closing did: held bytes never given back would stall every slot
    if battery is not None:
        for k, v in battery.costs().items():
            t[f"cost_{k}"] = v
        unique = {(r["gate"], r["profile"]): r for r in battery.records}
        outcome["verdicts"] = list(unique.values())
        if shape is not None:
            reduced_mod.mark(outcome["verdicts"], shape)
    for closed in given_up:  # their starts and calls took the slot's time too
        if battery is not None and closed is battery.s:  # counted above (reduce() raised)
            continue
        for k, v in closed.costs.items():
            t[f"cost_{k}"] = t.get(f"cost_{k}", 0.0) + v
    if shape is not None:
        t["reduced"] = 1
    outcome["message"] = _clip("; ".join(n for n in notes if n))
    t["total"] = time.monotonic() - t0
    return outcome
