"""One host-memory budget across the orchestrator processes of `kcv audit --procs`
(kcv/audit/memory_ledger.py): a gate counts what another process holds through the ledger file,
waits until that process releases it, and a row the launcher clears (a killed child's) frees the
room. The other process is a real one (multiprocessing, spawn), since fcntl locks and the file's
rows are per process."""

import contextlib
import json
import multiprocessing
import sys
import threading
import time

import pytest

from kcv.audit.memory import MemoryBusy, MemoryGate
from kcv.audit.memory_ledger import Ledger

GIB = 1 << 30


def hold_in_another_process(path, row, n, held, release):
    gate = MemoryGate(100, ledger=Ledger(path, row))
    with gate.hold(n):
        held.set()
        release.wait(30)


@pytest.fixture
def ledger_file(tmp_path):
    path = str(tmp_path / "ledger")
    Ledger.create(path, 2)
    return path


def start_holder(path, row, n):
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=hold_in_another_process, args=(path, row, n, held, release))
    proc.start()
    assert held.wait(60), "the other process did not take its memory"
    return proc, release


def test_a_gate_counts_and_waits_for_what_another_process_holds(ledger_file):
    gate = MemoryGate(100, ledger=Ledger(ledger_file, 0))
    proc, release = start_holder(ledger_file, 1, 60)
    try:
        assert gate.admits(40) and not gate.admits(41)
        assert gate.reserve(50) is None
        with pytest.raises(MemoryBusy, match="did not fit in 0.3 s"):
            with gate.hold(50, timeout=0.3):
                pass
        assert gate.used == 0 and gate.reserved == 0  # nothing taken by the failed hold
        release.set()
        with gate.hold(50, timeout=30):  # the other process's release reaches us by polling
            assert gate.used == 50
    finally:
        release.set()
        proc.join(30)
    assert gate.admits(100)


def test_holdings_and_reservations_are_published_in_the_process_row(ledger_file):
    mine, other = MemoryGate(100, ledger=Ledger(ledger_file, 0)), Ledger(ledger_file, 1)
    reservation = mine.reserve(30)
    with mine.hold(20):
        with other.locked():
            assert other.others() == 50
    with other.locked():
        assert other.others() == 30
    reservation.release()
    with other.locked():
        assert other.others() == 0


def test_the_row_of_a_killed_process_is_freed_by_clear(ledger_file):
    gate = MemoryGate(100, ledger=Ledger(ledger_file, 0))
    proc, release = start_holder(ledger_file, 1, 90)
    proc.kill()
    proc.join(30)
    assert not gate.admits(20)  # the dead process's row still counts
    Ledger.clear(ledger_file, 1)
    assert gate.admits(100)


def test_a_row_outside_the_ledger_is_refused(ledger_file):
    with pytest.raises(ValueError, match="row 2 of 2"):
        Ledger(ledger_file, 2)


def test_the_children_share_the_whole_budget_instead_of_a_share_each(tmp_path):
    """Two kernels whose estimate is over half of --host-memory-gb and under all of it: with a
    1/P share each, a child set both aside to run alone at the end; with the one budget each
    child runs its kernel."""
    pytest.importorskip("kcv._core")
    pytest.importorskip("torch")
    from audit_helpers import SAMPLE, run_audit
    from kcv.audit.memory import estimate_host_bytes

    with open(SAMPLE) as f:
        template = json.loads(f.readline())
    reference = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                 "        return x * 2.0\ndef get_inputs():\n    return [torch.randn(8)]\n"
                 "def get_init_inputs():\n    return []\n")
    corpus = tmp_path / "twice.jsonl"
    with open(corpus, "w") as f:
        for k in (1, 2):
            row = dict(template, id=f"twice/cpu/L1/P{k}", corpus="twice", problem_id=k,
                       problem_name=f"{k}_Double", reference_code=reference,
                       candidate_code=reference.replace("class Model(", "class ModelNew("))
            f.write(json.dumps(row) + "\n")
    need = estimate_host_bytes(8 * 4, 8 * 4)
    budget_gb = 1.5 * need / 2**30
    proc = run_audit(str(corpus), "--store", str(tmp_path / "twice.db"), "--device", "cpu",
                     "--jobs", "2", "--procs", "2", "--host-memory-gb", repr(budget_gb))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "one budget of" in proc.stderr and "over 2 processes" in proc.stderr
    assert "runs alone" not in proc.stderr, proc.stderr[-4000:]
    assert "[2/2]" in proc.stderr
    from kcv import _core

    store = _core.Store(str(tmp_path / "twice.db"))
    assert sorted((k["kernel_id"], k["status"], k["replica_verdict"]) for k in store.kernels()) == [
        (f"twice/cpu/L1/P{k}", "ok", "accepted") for k in (1, 2)]


def hold_reserved_room_in_another_process(path, row, n, took):
    gate = MemoryGate(100 * GIB, ledger=Ledger(path, row))
    with gate.hold(n, timeout=120):
        took.set()


def test_a_reserved_room_is_not_lost_to_another_process_while_the_hold_takes_it(ledger_file):
    """The reservation is given back and the hold taken in one step under the ledger's lock:
    another process waiting for the same room cannot slip in between (the gap is widened here
    by a pause after each unlock)."""
    gate = MemoryGate(100 * GIB, ledger=Ledger(ledger_file, 0))
    reservation = gate.reserve(60 * GIB)
    ctx = multiprocessing.get_context("spawn")
    took = ctx.Event()
    other = ctx.Process(target=hold_reserved_room_in_another_process,
                        args=(ledger_file, 1, 60 * GIB, took))
    other.start()
    try:
        plain_locked = gate.ledger.locked

        @contextlib.contextmanager
        def slow_locked():
            with plain_locked():
                yield
            time.sleep(0.5)  # the other process polls every 0.25 s

        gate.ledger.locked = slow_locked
        time.sleep(1.0)  # the other process is waiting for room by now
        with pytest.raises(MemoryBusy, match="beside 60.0 GiB held or reserved"):
            with gate.hold(50 * GIB, timeout=0.1):  # no reservation: must wait, and gives up
                pass
        with gate.hold(60 * GIB, timeout=1.0, reservation=reservation):
            assert gate.used == 60 * GIB and gate.reserved == 0
            assert not took.is_set()
        assert took.wait(20)  # and the other process gets the room once it is freed
    finally:
        other.join(30)
        if other.is_alive():
            other.kill()


def test_the_launcher_frees_a_killed_childs_row_while_an_earlier_child_still_runs(tmp_path):
    """Child 1 holds 90 of 100 and is killed; child 0 then needs 50 and waits with no limit. The
    launcher must clear row 1 when child 1 dies, not after child 0 exits (which it never would)."""
    pytest.importorskip("kcv._core")
    from kcv.audit.orchestrator import AuditConfig
    from kcv.audit.parallel import ParallelAuditor

    prelude = (f"import os, signal, sys, time\nsys.path[:0] = {sys.path!r}\n"
               "from kcv.audit.memory import MemoryGate\nfrom kcv.audit.memory_ledger import Ledger\n"
               "path, row = sys.argv[1].rsplit(':', 1)\n"
               "gate = MemoryGate(100, ledger=Ledger(path, int(row)))\n")
    scripts = {
        "waits": prelude + ("while True:\n    with gate._shared():\n        if gate._taken():\n"
                            "            break\n    time.sleep(0.05)\n"
                            "with gate.hold(50):\n    pass\n"),
        "killed": prelude + "with gate.hold(90):\n    time.sleep(0.5)\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    }
    auditor = ParallelAuditor(AuditConfig(corpora=[], store=str(tmp_path / "s.db")), 2)
    auditor.child_command = lambda ids, *rest: [sys.executable, "-c", scripts[ids[0]], rest[-1]]
    ledger = str(tmp_path / "ledger")
    Ledger.create(ledger, 2)
    plans = [(["waits"], 1, 1.0, True, None), (["killed"], 1, 1.0, True, None)]
    runner = threading.Thread(target=auditor._run_children, args=(plans, ledger), daemon=True)
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the launcher still waits for child 0, which waits for row 1"
    assert auditor.failed_processes == 1  # the killed child
