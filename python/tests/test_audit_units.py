"""Unit tests of kcv.audit's pure parts (no workers): the progress display, the reduced shape's
choice of constants (rescale.reduce), the orchestrator's row reading and ordering (shards,
--ids-from, round-robin over corpora, malformed rows), the host-memory gate, and the slots'
scheduling of postponed and lost kernels (audit_kernel replaced by a stand-in). Expectations
are derived from the documented rules (the modules' docstrings), not from a run."""

import io
import json
from pathlib import Path

import pytest

from kcv.audit import progress, rescale


def test_progress_prints_one_line_per_kernel_without_a_terminal():
    out = io.StringIO()
    t = [0.0]
    p = progress.Progress(3, stream=out, clock=lambda: t[0])
    t[0] = 60.0
    p.kernel_done("a", "ok", 1.0)
    p.kernel_done("b", "crash", 2.0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "[2/3]" in lines[1] and "crash 1" in lines[1] and "ok 1" in lines[1]
    assert "ETA 30s" in lines[1]  # 2 kernels in 60 s, 1 left


def test_reduce_shrinks_the_batch_first_keeping_its_power_of_two_alignment():
    consts = {"batch_size": 4096, "dim": 393216, "unused": 8}
    # 4096 / 48 = 85.3: down to a multiple of 64, the largest power of two not above it
    assert rescale.reduce(consts, ["batch_size", "dim"], [], 48) == ({"batch_size": 64}, "")
    # Past the batch (taken to 1), the next size get_inputs reads takes the rest of the factor:
    # 393216 / (100000 / 4096) = 16106 -> a multiple of 8192 (393216 = 3 * 2^17).
    assert rescale.reduce(consts, ["batch_size", "dim"], [], 100000) == (
        {"batch_size": 1, "dim": 8192}, "")
    # a name get_inputs does not read is never touched
    assert "unused" not in rescale.reduce(consts, ["batch_size", "dim"], [], 1e9)[0]


def test_reduce_keeps_the_weights_sizes_until_last():
    consts = {"batch_size": 8, "in_features": 4096, "height": 1024}
    override, why = rescale.reduce(consts, ["batch_size", "in_features", "height"],
                                   ["in_features"], 8 * 64)
    assert why == ""
    assert override == {"batch_size": 1, "height": 16}  # in_features (the weights') untouched
    # only once the other sizes are at their floor does a weight's size shrink
    override, _ = rescale.reduce(consts, ["batch_size", "in_features", "height"],
                                 ["in_features"], 8 * 64 * 4)
    assert override == {"batch_size": 1, "height": 16, "in_features": 1024}


def test_reduce_keeps_non_batch_sizes_at_the_floor_and_skips_avoided_names():
    assert rescale.REDUCE_FLOOR == 16
    # N is not a batch name: it stops at the floor, however large the factor
    assert rescale.reduce({"N": 64}, ["N"], [], 1000) == ({"N": 16}, "")
    # a size already under the floor keeps its value (it is its own floor)
    assert rescale.reduce({"N": 8, "batch": 4}, ["N", "batch"], [], 8) == ({"batch": 1}, "")
    # avoid: names of a shape the reference did not take
    assert rescale.reduce({"batch_size": 16, "dim": 64}, ["batch_size", "dim"], [], 4,
                          avoid={"batch_size"}) == ({"dim": 16}, "")
    # bools and non-positive values are not sizes
    assert rescale.reduce({"flag": True, "zero": 0, "dim": 64}, ["flag", "zero", "dim"], [],
                          4) == ({"dim": 16}, "")


def test_reduce_says_why_not():
    assert rescale.reduce({"batch_size": 64}, ["batch_size"], [], 1.0) == (
        None, "nothing to shrink: a factor of 1")
    assert "nothing to shrink" in rescale.reduce({"batch_size": 64}, ["batch_size"], [],
                                                 float("nan"))[1]
    override, why = rescale.reduce({}, [], [], 10)
    assert override is None and "get_inputs reads no module-level int constant" in why
    override, why = rescale.reduce({"n": 16}, ["n"], [], 10)
    assert override is None and "already at its floor" in why
    override, why = rescale.reduce({"n": 64}, ["n"], [], 10, avoid={"n"})
    assert override is None and why == "no size left that the reference takes smaller"


def test_a_cut_short_run_covers_every_corpus_round_robin():
    from kcv.audit.orchestrator import interleave_corpora

    rows = [{"id": f"a/{k}", "corpus": "a"} for k in range(3)] + \
           [{"id": f"b/{k}", "corpus": "b"} for k in range(1)] + \
           [{"id": f"c/{k}", "corpus": "c"} for k in range(2)]
    got = [r["id"] for r in interleave_corpora(rows)]
    assert got == ["a/0", "b/0", "c/0", "a/1", "c/1", "a/2"]
    assert interleave_corpora([]) == []


def test_a_shard_list_does_each_shard_before_the_next_and_each_row_once():
    import argparse

    from kcv import _core
    from kcv.audit.__main__ import _shard
    from kcv.audit.orchestrator import AuditConfig, order_todo, read_rows

    assert _shard("0/4, 0/2,0/1") == "0/4,0/2,0/1"
    with pytest.raises(argparse.ArgumentTypeError, match="0 <= i < n"):
        _shard("0/4,2/2")

    class Store:  # read_rows only records malformed rows in it (none is in it yet)
        def __init__(self):
            self.malformed = []

        def kernels(self):
            return []

        def record_malformed(self, file, line, kernel_id, message, corpus, run_id, *hashes):
            self.malformed.append(kernel_id)

    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    store = Store()
    rows = read_rows(AuditConfig(corpora=[sample], store="", shard="0/2,0/1"), store, 1)
    first = {r["id"] for r in _core.read_corpus(sample, "0/2")[0]}
    everything = {r["id"] for r in _core.read_corpus(sample, "0/1")[0]}
    assert 0 < len(first) < len(everything)  # the sample splits, so the order is tested
    assert [r["id"] for r in rows if r["shard_rank"] == 0] == [
        r["id"] for r in rows if r["id"] in first]
    assert sorted(r["id"] for r in rows) == sorted(everything)  # each row once
    assert store.malformed == ["sample/cpu/L1/P8"]
    again = Store()  # a shard listed twice: its rows and its malformed row count once
    rows_twice = read_rows(AuditConfig(corpora=[sample], store="", shard="0/1,0/1"), again, 1)
    assert again.malformed == ["sample/cpu/L1/P8"]
    assert sorted(r["id"] for r in rows_twice) == sorted(everything)

    todo = [r["id"] for r in order_todo(list(reversed(rows)))]
    assert set(todo[: len(first)]) == first and set(todo) == everything


def test_ids_from_a_file_skip_comments_and_blank_lines(tmp_path):
    from kcv.audit.__main__ import main, read_ids

    listed = tmp_path / "ids.txt"
    listed.write_text("# the reverse case\nkbruns_a/x/L3/P49  # Mamba2\n\n  cudal1/h100/L1/P1\n")
    assert read_ids(str(listed)) == ["kbruns_a/x/L3/P49", "cudal1/h100/L1/P1"]
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    store = str(tmp_path / "s.db")
    assert main([sample, "--store", store, "--ids-from", str(empty)]) == 2
    assert main([sample, "--store", store, "--ids-from", str(tmp_path / "missing.txt")]) == 2
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00id")
    assert main([sample, "--store", store, "--ids-from", str(binary)]) == 2


def test_rows_without_an_id_are_each_their_own_malformed_row(tmp_path):
    from kcv.audit.orchestrator import AuditConfig, read_rows

    class Store:
        def __init__(self):
            self.malformed = []

        def kernels(self):
            return []

        def record_malformed(self, file, line, kernel_id, message, corpus, run_id, *hashes):
            self.malformed.append((line, kernel_id))

    corpus = tmp_path / "broken.jsonl"
    corpus.write_text("not json\n{broken\n")
    store = Store()
    assert read_rows(AuditConfig(corpora=[str(corpus)], store="", shard="0/1,0/1"), store, 1) == []
    assert [line for line, _ in store.malformed] == [1, 2]  # two rows, once each


def test_memory_gate_makes_a_kernel_wait_until_its_estimate_fits():
    import threading
    import time

    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    from kcv.audit import memory

    # the documented copies: each input byte INPUT_COPIES times, each output byte OUTPUT_COPIES
    assert (memory.INPUT_COPIES, memory.OUTPUT_COPIES) == (7, 24)
    assert estimate_host_bytes(10, 1) == 7 * 10 + 24 * 1
    assert estimate_host_bytes(0, 0) == 0
    gate = MemoryGate(100)
    order, release = [], threading.Event()

    def second():
        with gate.hold(50):
            order.append(("second", gate.used))
            release.wait(5)

    with gate.hold(70):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.2)
        assert order == [] and gate.used == 70  # 70 + 50 > 100: it waits
        order.append(("first done", gate.used))
    deadline = time.monotonic() + 5  # the waiting thread wakes when it is scheduled, not at once
    while len(order) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == [("first done", 70), ("second", 50)]
    release.set()
    t.join(timeout=5)
    assert gate.used == 0


def test_memory_gate_with_a_timeout_gives_up_and_holds_nothing():
    from kcv.audit.memory import MemoryBusy, MemoryGate

    gate = MemoryGate(100)
    with gate.hold(70):
        assert gate.admits(30) and not gate.admits(50)
        with pytest.raises(MemoryBusy, match="did not fit in 0.1 s beside 0.0 GiB held") as busy:
            with gate.hold(50, timeout=0.1):
                pass
        assert gate.used == 70 and busy.value.need == 50
        with gate.hold(30, timeout=0.1):  # fits: no wait, no error
            assert gate.used == 100
    assert gate.used == 0


def test_memory_gate_reserves_room_that_others_do_not_count_and_a_hold_consumes():
    from kcv.audit.memory import MemoryBusy, MemoryGate

    gate = MemoryGate(100)
    first = gate.reserve(60)
    assert first is not None and gate.reserved == 60
    assert gate.reserve(60) is None and not gate.admits(50) and gate.admits(40)
    with pytest.raises(MemoryBusy):
        with gate.hold(50, timeout=0.1):  # a queued kernel cannot take the reserved room
            pass
    with gate.hold(60, timeout=0.1, reservation=first):  # the reserved one gets in at once
        assert (gate.used, gate.reserved) == (60, 0)
        first.release()  # consumed: nothing to give back
        assert gate.reserved == 0
    second = gate.reserve(70)
    second.release()
    second.release()  # once only
    assert (gate.used, gate.reserved) == (0, 0) and gate.admits(100)


def test_a_kernel_short_of_host_memory_gives_its_slot_up_and_runs_after_the_queue(
        tmp_path, monkeypatch):
    from kcv.audit import orchestrator

    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    calls = []
    heavy = None

    def fake_audit_kernel(row, cfg, timings=None, alone=False, may_postpone=False,
                          reservation=None, state=None):
        nonlocal heavy
        calls.append((row["id"], may_postpone))
        heavy = heavy or row["id"]
        if row["id"] == heavy and may_postpone:
            return {"kernel_id": row["id"], "status": "postponed", "replica_verdict": None,
                    "message": "host memory: 9.0 GiB did not fit", "verdicts": [],
                    "host_bytes": 9 << 30}
        return {"kernel_id": row["id"], "status": "ok", "replica_verdict": "accepted",
                "message": "", "verdicts": []}

    monkeypatch.setattr(orchestrator, "audit_kernel", fake_audit_kernel)
    opts = orchestrator.AuditConfig(corpora=[sample], store=str(tmp_path / "a.db"), jobs=2,
                                     progress=False)
    summary = orchestrator.run_audit(opts)
    ids = [k for k, _ in calls]
    assert ids.count(heavy) == 2 and len(set(ids)) == len(ids) - 1
    # No budget says it fits: once the queue is done, and waiting this time. The other slot may
    # still be starting the last queued kernel then, so the retake is one of the last two calls.
    assert [c for c in calls if not c[1]] == [(heavy, False)] and (heavy, False) in calls[-2:]
    assert summary["left"] == 0
    assert summary["statuses"].get("ok") == len(set(ids)), summary


def test_left_to_do_counts_the_rows_this_command_selects_not_the_whole_store(tmp_path, monkeypatch):
    from kcv.audit import orchestrator

    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    ids = [json.loads(line)["id"] for line in open(sample, encoding="utf-8") if line.strip()]
    chosen, broken = ids[0], ids[1]
    lost = set(ids)  # the first run loses every kernel (an error of ours: each stays unfinished)

    def fake_audit_kernel(row, cfg, timings=None, alone=False, may_postpone=False,
                          reservation=None, state=None):
        if row["id"] in lost:
            raise RuntimeError("lost")
        return {"kernel_id": row["id"], "status": "ok", "replica_verdict": "accepted",
                "message": "", "verdicts": []}

    monkeypatch.setattr(orchestrator, "audit_kernel", fake_audit_kernel)
    store = str(tmp_path / "a.db")
    first = orchestrator.run_audit(orchestrator.AuditConfig(
        corpora=[sample], store=store, jobs=2, progress=False))
    # the sample's valid rows, pending again: an error of ours is not a run that died
    assert first["left"] == first["statuses"]["pending"] > 2, first
    lost = {broken}
    summary = orchestrator.run_audit(orchestrator.AuditConfig(
        corpora=[sample], store=store, jobs=2, progress=False, ids=[chosen, broken]))
    assert summary["statuses"].get("ok") == 1 and summary["left"] == 1, summary


def test_memory_gate_lets_an_oversized_kernel_run_when_nothing_else_holds_memory():
    from kcv.audit.memory import MemoryGate

    gate = MemoryGate(100)
    assert not gate.fits(500) and gate.admits(500)
    with gate.hold(500):
        assert gate.used == 500 and not gate.admits(1)
    assert gate.used == 0
    with pytest.raises(ValueError):
        MemoryGate(0)


def test_a_bug_of_ours_in_one_kernel_is_its_error_and_the_audit_goes_on(tmp_path, monkeypatch):
    # With --jobs 1 no slot catches an exception: audit_kernel must turn it into the kernel's
    # `error` (final), and hand back the GPU it held.
    from kcv.audit import kernel as kernel_mod, orchestrator
    from kcv.audit.gpus import GpuPool

    def broken_sizing(row, **_kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(kernel_mod, "size_problem", broken_sizing)
    pool = GpuPool(["0"])
    out = kernel_mod.audit_kernel({"id": "k", "reference_code": ""},
                                  kernel_mod.KernelConfig(profiles=["strict"], gpu_pool=pool))
    assert out["status"] == "error" and out["verdicts"] == [] and out["kernel_id"] == "k"
    assert out["message"].startswith("internal error in kcv.audit: KeyError: 'boom'")
    assert pool.in_flight == [0]
    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    summary = orchestrator.run_audit(orchestrator.AuditConfig(
        corpora=[sample], store=str(tmp_path / "a.db"), jobs=1, progress=False,
        ids=["sample/cpu/L1/P1", "sample/cpu/L1/P2"]))
    assert summary["statuses"] == {"error": 2} and summary["left"] == 0, summary
