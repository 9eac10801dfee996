"""The orchestrator's slots and kernels postponed for host memory (orchestrator.Auditor._slot)
through the real kernel.audit_kernel: its sizing (sizing.size_problem) and its pipeline call
(kcv._core.verify_module) are stand-ins, so the admission that audit_kernel does (the estimate,
the MemoryGate hold that gives up after memory_postpone_s, the reservation it consumes, the
`postponed` status with its host_bytes) is the product's. Two slots over the seven kernels of
examples/kernelbench/sample.jsonl; a kernel's "size" is the estimate's unit: a budget of
BUDGET_UNITS units is estimate_host_bytes(100, 0) bytes. Kernels are told apart by the order in
which they first start (role 0, 1, 2, ...), since two slots start at once."""

import dataclasses
import gc
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from kcv.audit import kernel as kernel_mod, orchestrator
from kcv.audit.memory import estimate_host_bytes
from kcv.audit.sizing import Sized

_core = pytest.importorskip("kcv._core")

SAMPLE = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
KERNELS = 7  # and one malformed row
WAIT_S = 30.0  # what a fake waits for an event that the old order never sets
BUDGET_UNITS = 100
UNIT = estimate_host_bytes(1, 0)  # host bytes per input byte
POSTPONE_S = 0.1  # KernelConfig.memory_postpone_s of these runs


def nothing(*_args):
    return None


@dataclass
class Kernel:
    """One role's behaviour: `need` units of host memory (input bytes; 0: no hold at all);
    before(may_postpone, gate) runs as the slot takes it (before sizing; an outcome it returns
    is the call's, audit_kernel is not reached), during() inside verify_module (so while its
    memory is held), after(outcome) once audit_kernel returned."""
    need: int = 0
    before: Callable = nothing
    during: Callable = nothing
    after: Callable = nothing


class FakeKernels:
    """Stand-ins of size_problem and verify_module, and a recording wrapper of audit_kernel:
    records (role, may_postpone) per call."""

    def __init__(self, behaviour: dict):
        self.behaviour = behaviour
        self.roles: dict[str, int] = {}
        self.calls: list[tuple[int, bool]] = []
        self.outcomes: list[tuple[int, str]] = []  # (role, audit_kernel's status)
        self._lock = threading.Lock()
        self.real_audit_kernel = kernel_mod.audit_kernel

    def kernel(self, row) -> Kernel:
        return self.behaviour.get(self.roles[row["id"]], Kernel())

    def audit_kernel(self, row, cfg, timings=None, alone=False, may_postpone=False,
                     reservation=None, state=None):
        with self._lock:
            role = self.roles.setdefault(row["id"], len(self.roles))
            self.calls.append((role, may_postpone))
        k = self.kernel(row)
        out = k.before(may_postpone, cfg.memory_gate)
        if out is None:
            out = self.real_audit_kernel(row, cfg, timings, alone=alone,
                                         may_postpone=may_postpone, reservation=reservation,
                                         state=state)
        with self._lock:
            self.outcomes.append((role, out["status"]))
        k.after(out)
        return out

    def size_problem(self, row, **_kwargs):
        return Sized(self.kernel(row).need, 0, False)

    def verify_module(self, row, **_kwargs):
        self.kernel(row).during()
        return {"kernel_id": row["id"], "status": "ok", "message": "", "replica_verdict": "accepted",
                "verdicts": [], "op_class": "elementwise", "determinism_declared": True,
                "facts": "{}", "timings": {"load": 0.0}, "out_of_memory": False}


class CountingStore:
    """The store, counting the outcomes recorded per kernel."""

    def __init__(self, store):
        self._store = store
        self.records: dict[str, int] = {}

    def record(self, outcome, run_id):
        self.records[outcome["kernel_id"]] = self.records.get(outcome["kernel_id"], 0) + 1
        return self._store.record(outcome, run_id)

    def __getattr__(self, name):
        return getattr(self._store, name)


def run_slots(tmp_path, monkeypatch, fake, **opts):
    """Audits the sample with two slots (or opts' jobs) and a budget of BUDGET_UNITS; returns
    the summary, the kernels left to do and the records per kernel. Fails rather than hangs on
    a deadlock."""
    monkeypatch.setattr(orchestrator, "audit_kernel", fake.audit_kernel)
    monkeypatch.setattr(kernel_mod, "size_problem", fake.size_problem)
    monkeypatch.setattr(_core, "verify_module", fake.verify_module)
    auditor = orchestrator.Auditor(orchestrator.AuditConfig(
        corpora=[SAMPLE], store=str(tmp_path / "a.db"), progress=False,
        host_memory_bytes=BUDGET_UNITS * UNIT, **{"jobs": 2, **opts}))
    auditor.cfg = dataclasses.replace(auditor.cfg, memory_postpone_s=POSTPONE_S)
    auditor.store = CountingStore(auditor.store)
    done: dict = {}

    def audit():
        try:
            done["summary"] = auditor.run()
        except BaseException as e:  # noqa: BLE001 - raised again below, in the test
            done["error"] = e

    t = threading.Thread(target=audit, daemon=True)
    t.start()
    t.join(600)
    assert not t.is_alive(), "the audit did not end"
    if "error" in done:
        raise done["error"]
    left, records = set(auditor.store.todo()), auditor.store.records
    auditor.store = None
    gc.collect()
    return done["summary"], left, records


def wait_for(event):
    """A `before` that waits for `event` (and returns None: audit_kernel runs)."""
    def before(*_args):
        event.wait(WAIT_S)
    return before


def test_a_postponed_kernel_runs_again_once_memory_frees_before_later_queued_kernels(
        tmp_path, monkeypatch):
    holding, given_up, retried = threading.Event(), threading.Event(), threading.Event()
    fake = FakeKernels({
        # 70 of 100 until role 1 has given up
        0: Kernel(70, during=lambda: (holding.set(), given_up.wait(WAIT_S))),
        # needs 50: postponed while role 0 holds, run again once it is done
        1: Kernel(50, before=wait_for(holding), during=retried.set,
                  after=lambda out: given_up.set()),
        # keeps its slot until role 1 runs again
        2: Kernel(0, during=lambda: retried.wait(WAIT_S)),
    })
    summary, left, records = run_slots(tmp_path, monkeypatch, fake)
    assert [c for c in fake.calls if c[0] == 1] == [(1, True), (1, True)]
    assert [s for r, s in fake.outcomes if r == 1] == ["postponed", "ok"]
    # Role 0 gave its memory back while role 2 kept the other slot: role 1 ran again before
    # roles 3.. (the old order: after them all, without giving up).
    retry = max(k for k, (role, _) in enumerate(fake.calls) if role == 1)
    assert retry < min(fake.calls.index((r, True)) for r in range(3, KERNELS)), fake.calls
    assert summary["statuses"].get("ok") == KERNELS and left == set()
    assert set(records.values()) == {1}


def test_audit_kernel_postpones_with_its_estimate_and_holds_nothing(tmp_path, monkeypatch):
    holding, given_up = threading.Event(), threading.Event()
    seen: dict = {}

    def before(may_postpone, gate):
        seen["gate"] = gate
        holding.wait(WAIT_S)

    def after(out):
        if out["status"] == "postponed":
            seen.setdefault("postponed", out)
            seen["used then"] = seen["gate"].used  # role 0's hold only
        given_up.set()

    fake = FakeKernels({
        0: Kernel(70, during=lambda: (holding.set(), given_up.wait(WAIT_S))),
        1: Kernel(50, before=before, after=after),
    })
    run_slots(tmp_path, monkeypatch, fake)
    out = seen["postponed"]
    assert out["host_bytes"] == estimate_host_bytes(50, 0)  # what the orchestrator waits for
    assert out["message"].startswith("host memory: ") and f"in {POSTPONE_S:g} s" in out["message"]
    assert seen["used then"] == estimate_host_bytes(70, 0)
    assert seen["gate"].used == 0 and seen["gate"].reserved == 0  # all given back at the end


def test_a_postponed_kernel_that_never_fits_beside_others_waits_at_the_end_and_the_run_ends(
        tmp_path, monkeypatch):
    holding, last_phase = threading.Event(), threading.Event()
    seen: dict = {}

    def held():  # 20 of 100 until role 1 waits without giving up
        holding.set()
        seen["last phase while held"] = last_phase.wait(WAIT_S)

    def heavy_before(may_postpone, gate):  # needs 90: never beside role 0
        holding.wait(WAIT_S)
        if not may_postpone:
            last_phase.set()
        return None

    fake = FakeKernels({0: Kernel(20, during=held), 1: Kernel(90, before=heavy_before)})
    summary, left, _ = run_slots(tmp_path, monkeypatch, fake)
    # Once postponed, not retaken until the queue was done (no spinning), then it waited for
    # role 0's memory in the slot the queue left free: the old order waited for role 0 to end.
    assert fake.calls[-1] == (1, False) and fake.calls.count((1, True)) == 1, fake.calls
    assert seen["last phase while held"]
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_a_kernel_postponed_twice_is_retried_in_its_turn_and_recorded_once(tmp_path, monkeypatch):
    # With its room reserved a retaken kernel is not postponed again by the real gate (the next
    # test); a larger estimate than the one reserved could be. That is stood in for here: its
    # first two tries return `postponed` of an estimate that fits, without reaching audit_kernel.
    times = [0]
    done = threading.Event()

    def before(may_postpone, gate):
        if may_postpone and times[0] < 2:
            times[0] += 1
            return {"status": "postponed", "host_bytes": 10 * UNIT, "message": "host memory"}
        return None

    # role 1 keeps the other slot (and the queue full) until role 0 is done
    fake = FakeKernels({0: Kernel(10, before=before, after=lambda out: done.set()),
                        1: Kernel(0, during=lambda: done.wait(WAIT_S))})
    summary, left, records = run_slots(tmp_path, monkeypatch, fake)
    # It fitted each time, so it was retaken at once, each time free to give up again (the
    # old order ran it once more only, after the queue, waiting).
    assert [c for c in fake.calls if c[0] == 0] == [(0, True)] * 3, fake.calls
    assert [s for r, s in fake.outcomes if r == 0] == ["postponed", "postponed", "ok"]
    assert records == {k: 1 for k in fake.roles}
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_a_retaken_kernel_holds_the_room_reserved_for_it_whoever_else_asks(tmp_path, monkeypatch):
    # Role 0 (70 of 100) makes role 1 (50) give up; once role 0 is done role 1 is retaken with
    # 50 reserved, and an outside holder that asks for 60 then cannot take that room: role 1
    # holds at once and is not postponed a second time.
    holding, given_up = threading.Event(), threading.Event()
    outside: dict = {}

    def retake(may_postpone, gate):
        if not holding.is_set() or not given_up.is_set():
            holding.wait(WAIT_S)
            return None
        outside["admits 60"] = gate.admits(60 * UNIT)  # the reserved 50 counts as taken
        outside["admits 50"] = gate.admits(50 * UNIT)
        return None

    fake = FakeKernels({
        0: Kernel(70, during=lambda: (holding.set(), given_up.wait(WAIT_S))),
        1: Kernel(50, before=retake, after=lambda out: given_up.set()),
        2: Kernel(0, during=lambda: time.sleep(0.5)),
    })
    summary, left, records = run_slots(tmp_path, monkeypatch, fake)
    assert [s for r, s in fake.outcomes if r == 1] == ["postponed", "ok"], fake.outcomes
    assert outside == {"admits 60": False, "admits 50": True}
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_the_time_limit_leaves_kernels_not_started_and_postponed_ones_to_do(tmp_path, monkeypatch):
    limit_s = 2.0  # from the Auditor's creation: room for reading the sample on a slow machine
    holding = threading.Event()
    fake = FakeKernels({
        0: Kernel(70, during=lambda: (holding.set(), time.sleep(2 * limit_s))),  # past the limit
        1: Kernel(50, before=wait_for(holding)),  # postponed, then fits only after the limit
        2: Kernel(0, during=lambda: time.sleep(2 * limit_s)),  # started before the limit
    })
    summary, left, records = run_slots(tmp_path, monkeypatch, fake, time_limit_s=limit_s)
    assert sorted(fake.calls) == [(0, True), (1, True), (2, True)], fake.calls
    role = {r: k for k, r in fake.roles.items()}
    assert set(records) == {role[0], role[2]}
    assert summary["statuses"].get("ok") == 2 and summary["left"] == KERNELS - 2
    assert role[1] in left and len(left) == KERNELS - 2


def test_a_postponed_kernel_taken_again_has_its_room_reserved_while_it_loads(
        tmp_path, monkeypatch):
    # Three slots; role 0 holds 60 of 100; roles 1 and 2 need 60 each and are postponed; their
    # slots take roles 3 and 4, which hold 10 each. When role 0 ends, its slot takes one of the
    # postponed kernels again (80 free) and reserves its 60 at once. That kernel "loads" (before
    # audit_kernel holds) until roles 3 and 4 have ended and their slots have taken the next
    # kernels: with the room reserved only 40 is free then, so they must take roles 5 and 6, not
    # the other postponed kernel (which would be taken again on room that is already promised,
    # and be postponed a second time). Events, not sleeps, order the phases, so a slow machine
    # cannot reorder them.
    holding, retaken = threading.Event(), threading.Event()
    lights_holding = threading.Semaphore(0)
    later_started = threading.Barrier(3)  # roles 5 and 6 started, and the retaken kernel
    tries: dict[int, int] = {}

    def held():
        holding.set()
        for _ in range(2):  # until roles 3 and 4 hold their 10
            lights_holding.acquire(timeout=WAIT_S)

    def heavy_before(role):
        def before(may_postpone, gate):
            tries[role] = tries.get(role, 0) + 1
            if tries[role] == 1:
                holding.wait(WAIT_S)
            elif not retaken.is_set():  # taken again: loads until the freed slots chose
                retaken.set()
                try:
                    later_started.wait(WAIT_S)
                except threading.BrokenBarrierError:  # the old order: the other one was taken
                    pass
        return before

    def later_before(may_postpone, gate):
        try:
            later_started.wait(WAIT_S)
        except threading.BrokenBarrierError:
            pass

    light = Kernel(10, during=lambda: (lights_holding.release(), retaken.wait(WAIT_S)))
    fake = FakeKernels({0: Kernel(60, during=held), 1: Kernel(60, before=heavy_before(1)),
                        2: Kernel(60, before=heavy_before(2)), 3: light, 4: light,
                        5: Kernel(10, before=later_before), 6: Kernel(10, before=later_before)})
    summary, left, records = run_slots(tmp_path, monkeypatch, fake, jobs=3)
    postponements = {r: fake.outcomes.count((r, "postponed")) for r in (1, 2)}
    assert postponements == {1: 1, 2: 1}, fake.outcomes
    # The other postponed kernel was taken again only after roles 5 and 6 had started.
    last_heavy = max(k for k, (role, _) in enumerate(fake.calls) if role in (1, 2))
    assert last_heavy > max(fake.calls.index((r, True)) for r in (5, 6)), fake.calls
    assert summary["statuses"].get("ok") == KERNELS and left == set()
    assert set(records.values()) == {1}


def test_a_kernel_over_the_whole_budget_runs_alone_after_the_others(tmp_path, monkeypatch):
    others_done = []

    def before(may_postpone, gate):
        others_done.append(sum(1 for r, s in fake.outcomes if r != 0 and s == "ok"))

    fake = FakeKernels({0: Kernel(BUDGET_UNITS + 1, before=before)})
    summary, left, records = run_slots(tmp_path, monkeypatch, fake)
    # first `run_alone` (its estimate exceeds the whole budget), then alone once all others ended
    assert [c for c in fake.calls if c[0] == 0] == [(0, True), (0, False)], fake.calls
    assert [s for r, s in fake.outcomes if r == 0] == ["run_alone", "ok"]
    assert others_done[-1] == KERNELS - 1
    assert records == {k: 1 for k in fake.roles} and left == set()


def test_an_error_of_ours_around_one_kernel_leaves_it_to_do_and_the_slot_goes_on(
        tmp_path, monkeypatch):
    failing: list = []
    real_record = CountingStore.record

    def record(self, outcome, run_id):
        if not failing:  # the first kernel to finish: the store refuses it once
            failing.append(outcome["kernel_id"])
            raise RuntimeError("disk I/O error")
        return real_record(self, outcome, run_id)

    monkeypatch.setattr(CountingStore, "record", record)
    summary, left, records = run_slots(tmp_path, monkeypatch, FakeKernels({}))
    assert left == set(failing) and len(records) == KERNELS - 1
    assert summary["statuses"].get("ok") == KERNELS - 1
