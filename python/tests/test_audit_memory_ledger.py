"""One host-memory budget across the orchestrator processes of `kcv audit --procs`
(kcv/audit/memory_ledger.py): a gate counts what another process holds through the ledger file,
waits until that process releases it, and a row the launcher clears (a killed child's) frees the
room. The other process is a real one (multiprocessing, spawn), since fcntl locks and the file's
rows are per process."""

import json
import multiprocessing

import pytest

from kcv.audit.memory import MemoryBusy, MemoryGate
from kcv.audit.memory_ledger import Ledger


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
        with pytest.raises(MemoryBusy, match="beside 0.0 GiB held"):
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
