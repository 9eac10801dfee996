"""The orchestrator's slots and kernels postponed for host memory (orchestrator.Auditor._slot),
with a fake audit_kernel that holds the real MemoryGate as audit_kernel does: two slots over the
seven kernels of examples/kernelbench/sample.jsonl, a budget of 100 bytes. Kernels are told apart
by the order in which they first start (role 0, 1, 2, ...), since two slots start at once."""

import gc
import threading
import time
from pathlib import Path

from kcv.audit import orchestrator
from kcv.audit.memory import MemoryBusy
from kcv.audit.replica import trial_seeds

SAMPLE = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
KERNELS = 7  # and one malformed row
WAIT_S = 30.0  # what a fake waits for an event that the old order never sets


def ok(row):
    return {"kernel_id": row["id"], "status": "ok", "replica_verdict": "accepted", "message": "",
            "verdicts": []}


def postponed(row, need):
    return {"kernel_id": row["id"], "status": "postponed", "replica_verdict": None,
            "message": "host memory: no room", "verdicts": [], "host_bytes": need}


def held_or_postponed(row, gate, need, may_postpone, while_held=lambda: None):
    """What audit_kernel does with the gate: hold `need` (giving up after 0.1 s if it may be
    postponed) while the kernel runs."""
    try:
        with gate.hold(need, 0.1 if may_postpone else None):
            while_held()
    except MemoryBusy as e:
        return postponed(row, e.need)
    return ok(row)


class FakeKernels:
    """audit_kernel's stand-in: records (role, may_postpone) per call and runs behaviour[role]
    (default: done at once)."""

    def __init__(self, behaviour: dict):
        self.behaviour = behaviour
        self.roles: dict[str, int] = {}
        self.calls: list[tuple[int, bool]] = []
        self._lock = threading.Lock()

    def __call__(self, row, cfg, timings=None, alone=False, may_postpone=False, reservation=None):
        with self._lock:
            role = self.roles.setdefault(row["id"], len(self.roles))
            self.calls.append((role, may_postpone))
        run = self.behaviour.get(role)
        gate = ReservedGate(cfg.memory_gate, reservation)
        return run(row, gate, may_postpone) if run else ok(row)


class ReservedGate:
    """The gate as a behaviour sees it: its hold consumes the kernel's reservation, as
    audit_kernel's does."""

    def __init__(self, gate, reservation):
        self.gate, self.reservation = gate, reservation

    def hold(self, n, timeout=None):
        return self.gate.hold(n, timeout, reservation=self.reservation)

    def __getattr__(self, name):
        return getattr(self.gate, name)


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
    """Audits the sample with two slots (or opts' jobs) and a 100-byte budget; returns the
    summary, the kernels left to do and the records per kernel. Fails rather than hangs on a
    deadlock."""
    monkeypatch.setattr(orchestrator, "audit_kernel", fake)
    trial_seeds()  # imports torch now, not inside a --time-limit
    auditor = orchestrator.Auditor(orchestrator.AuditOptions(
        corpora=[SAMPLE], store=str(tmp_path / "a.db"), progress=False,
        host_memory_bytes=100, **{"jobs": 2, **opts}))
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


def test_a_postponed_kernel_runs_again_once_memory_frees_before_later_queued_kernels(
        tmp_path, monkeypatch):
    holding, given_up, retried = threading.Event(), threading.Event(), threading.Event()

    def holder(row, gate, may_postpone):  # 70 of 100 until role 1 has given up
        with gate.hold(70):
            holding.set()
            given_up.wait(WAIT_S)
        return ok(row)

    def heavy(row, gate, may_postpone):  # needs 50
        holding.wait(WAIT_S)
        out = held_or_postponed(row, gate, 50, may_postpone, while_held=retried.set)
        given_up.set()
        return out

    def next_one(row, gate, may_postpone):  # keeps its slot until role 1 runs again
        retried.wait(WAIT_S)
        return ok(row)

    fake = FakeKernels({0: holder, 1: heavy, 2: next_one})
    summary, left, _ = run_slots(tmp_path, monkeypatch, fake)
    assert [c for c in fake.calls if c[0] == 1] == [(1, True), (1, True)]
    # Role 0 gave its memory back while role 2 kept the other slot: role 1 ran again before
    # roles 3.. (the old order: after them all, without giving up).
    retry = max(k for k, (role, _) in enumerate(fake.calls) if role == 1)
    assert retry < min(fake.calls.index((r, True)) for r in range(3, KERNELS)), fake.calls
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_a_postponed_kernel_that_never_fits_beside_others_waits_at_the_end_and_the_run_ends(
        tmp_path, monkeypatch):
    holding, last_phase = threading.Event(), threading.Event()
    seen: dict = {}

    def holder(row, gate, may_postpone):  # 20 of 100 until role 1 waits without giving up
        with gate.hold(20):
            holding.set()
            seen["last phase while held"] = last_phase.wait(WAIT_S)
        return ok(row)

    def heavy(row, gate, may_postpone):  # needs 90: never beside role 0
        holding.wait(WAIT_S)
        if not may_postpone:
            last_phase.set()
        return held_or_postponed(row, gate, 90, may_postpone)

    fake = FakeKernels({0: holder, 1: heavy})
    summary, left, _ = run_slots(tmp_path, monkeypatch, fake)
    # Once postponed, not retaken until the queue was done (no spinning), then it waited for
    # role 0's memory in the slot the queue left free: the old order waited for role 0 to end.
    assert fake.calls[-1] == (1, False) and fake.calls.count((1, True)) == 1, fake.calls
    assert seen["last phase while held"]
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_a_kernel_postponed_twice_is_retried_in_its_turn_and_recorded_once(tmp_path, monkeypatch):
    times = 0

    def unlucky(row, gate, may_postpone):  # fits, but another slot takes the room twice
        nonlocal times
        if may_postpone and times < 2:
            times += 1
            return postponed(row, 1)
        return ok(row)

    fake = FakeKernels({0: unlucky})
    summary, left, records = run_slots(tmp_path, monkeypatch, fake)
    # It fitted each time, so it was retaken at once, each time free to give up again (the
    # old order ran it once more only, after the queue, waiting).
    assert [c for c in fake.calls if c[0] == 0] == [(0, True)] * 3, fake.calls
    assert records == {k: 1 for k in fake.roles}
    assert summary["statuses"].get("ok") == KERNELS and left == set()


def test_the_time_limit_leaves_kernels_not_started_and_postponed_ones_to_do(tmp_path, monkeypatch):
    limit_s = 2.0  # from the Auditor's creation: room for reading the sample on a slow machine
    holding = threading.Event()

    def holder(row, gate, may_postpone):  # 70 of 100 until past the limit
        with gate.hold(70):
            holding.set()
            time.sleep(2 * limit_s)
        return ok(row)

    def heavy(row, gate, may_postpone):  # needs 50: postponed, then fits only after the limit
        holding.wait(WAIT_S)
        return held_or_postponed(row, gate, 50, may_postpone)

    def slow(row, gate, may_postpone):  # started before the limit, done after it
        time.sleep(2 * limit_s)
        return ok(row)

    fake = FakeKernels({0: holder, 1: heavy, 2: slow})
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
    # postponed kernels again (80 free) and reserves its 60 at once. That kernel "loads" until
    # roles 3 and 4 have ended and their slots have taken the next kernels: with the room
    # reserved only 40 is free then, so they must take roles 5 and 6, not the other postponed
    # kernel (which would be taken again on room that is already promised, and be postponed a
    # second time). Events, not sleeps, order the phases, so a slow machine cannot reorder them.
    holding, retaken = threading.Event(), threading.Event()
    lights_holding = threading.Semaphore(0)
    later_started = threading.Barrier(3)  # roles 5 and 6 started, and the retaken kernel
    tries: dict[str, int] = {}

    def holder(row, gate, may_postpone):
        with gate.hold(60):
            holding.set()
            for _ in range(2):  # until roles 3 and 4 hold their 10
                lights_holding.acquire(timeout=WAIT_S)
        return ok(row)

    def heavy(row, gate, may_postpone):
        tries[row["id"]] = tries.get(row["id"], 0) + 1
        if tries[row["id"]] == 1:
            holding.wait(WAIT_S)
        elif not retaken.is_set():  # taken again: loads until the freed slots chose
            retaken.set()
            try:
                later_started.wait(WAIT_S)
            except threading.BrokenBarrierError:  # the old order: the other one was taken
                pass
        return held_or_postponed(row, gate, 60, may_postpone)

    def light(row, gate, may_postpone):  # roles 3 and 4: hold 10 until a kernel is retaken
        with gate.hold(10):
            lights_holding.release()
            retaken.wait(WAIT_S)
        return ok(row)

    def later(row, gate, may_postpone):  # roles 5 and 6
        try:
            later_started.wait(WAIT_S)
        except threading.BrokenBarrierError:
            pass
        return held_or_postponed(row, gate, 10, may_postpone)

    fake = FakeKernels({0: holder, 1: heavy, 2: heavy, 3: light, 4: light, 5: later, 6: later})
    outcomes: list = []
    real_audit_one = orchestrator.Auditor._audit_one

    def audit_one(self, row, *args, **kwargs):
        status = real_audit_one(self, row, *args, **kwargs)
        outcomes.append((fake.roles[row["id"]], status))
        return status

    monkeypatch.setattr(orchestrator.Auditor, "_audit_one", audit_one)
    summary, left, records = run_slots(tmp_path, monkeypatch, fake, jobs=3)
    postponements = {r: outcomes.count((r, "postponed")) for r in (1, 2)}
    assert postponements == {1: 1, 2: 1}, outcomes
    # The other postponed kernel was taken again only after roles 5 and 6 had started.
    last_heavy = max(k for k, (role, _) in enumerate(fake.calls) if role in (1, 2))
    assert last_heavy > max(fake.calls.index((r, True)) for r in (5, 6)), fake.calls
    assert summary["statuses"].get("ok") == KERNELS and left == set()
    assert set(records.values()) == {1}


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
