"""Unit tests of kcv.audit's pure parts (no workers): the error model, the replica's allclose
and seeds, the rescale choice, status mapping, verdict folding and the progress display.
Expectations are derived from the documented formulas (docs/08_audit.md), not constants."""

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kcv.audit import error_model, progress, replica, rescale, statuses, verdicts


def test_tau_is_final_rounding_plus_c_times_eager_error():
    y = np.array([1.0, -2.0, 0.5, 4.0])
    y32 = y + np.array([0.0, 3e-7, -1e-7, 0.0])
    u = error_model.unit_roundoff("f32")
    big_e = max(np.max(np.abs(y32 - y)), u * np.sqrt(np.mean(y**2)))
    t = error_model.tau(y, y32, "f32")
    np.testing.assert_allclose(t, u * np.abs(y) + error_model.C_EAGER * big_e, rtol=0, atol=0)


def test_eager_error_is_floored_at_rms_roundoff_when_eager_is_exact():
    y = np.array([3.0, 4.0])
    u = error_model.unit_roundoff("f32")
    assert error_model.eager_error(y, y.copy(), "f32") == u * np.sqrt(12.5)


def test_silent_bf16_downcast_exceeds_tau_but_a_reordering_does_not():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 256)), rng.standard_normal(256)
    exact = a @ b
    eager = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    t = error_model.tau(exact, eager, "f32")
    reordered = (a.astype(np.float32)[:, ::-1] @ b.astype(np.float32)[::-1]).astype(np.float64)
    assert np.all(np.abs(reordered - exact) <= t)
    bf16 = lambda x: (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)  # noqa: E731
    downcast = (bf16(a) @ bf16(b)).astype(np.float64)
    assert np.any(np.abs(downcast - exact) > t)


def test_integer_outputs_and_nonfinite_references_get_zero_tau():
    assert not error_model.tau(np.array([1.0, 2.0]), None, "i64").any()
    t = error_model.tau(np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.0]), "f32")
    assert t[0] == 0 and t[1] == 0 and t[2] > 0


def test_trial_seeds_follow_kernelbench_draw_from_42():
    torch = pytest.importorskip("torch")
    torch.manual_seed(42)
    expected = tuple(int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5))
    torch.manual_seed(7)
    state = torch.random.get_rng_state()
    replica.trial_seeds.cache_clear()
    assert replica.trial_seeds() == expected
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's RNG is untouched


def test_allclose_uses_candidate_magnitude_and_fails_on_any_nan():
    ref = np.array([100.0, 1.0], dtype=np.float32)
    edge = np.float32(100.0) + (np.float32(1e-2) + np.float32(1e-2) * np.float32(100.0))
    ok, _, _ = replica.allclose_like_torch(ref, np.array([edge * 0.999, 1.0], np.float32), "f32")
    assert ok
    ok, why, _ = replica.allclose_like_torch(ref, np.array([100.0, np.nan], np.float32), "f32")
    assert not ok and "NaN" in why
    ok, why, _ = replica.allclose_like_torch(np.array([np.nan], np.float32),
                                             np.array([np.nan], np.float32), "f32")
    assert not ok
    ok, _, _ = replica.allclose_like_torch(np.array([np.inf]), np.array([np.inf], np.float32), "f32")
    assert ok


def test_rescale_prefers_batch_constants_that_get_inputs_reads():
    src = ("M = 8\nbatch_size = 16\nunused = 4\n"
           "def get_inputs():\n    return [torch.randn(M, batch_size)]\n")
    assert rescale.choose(src, {"M": 8, "batch_size": 16, "unused": 4}) == ({"batch_size": 3}, "")
    src2 = "dim = 3\ndef get_inputs():\n    return [torch.randn(dim)]\n"
    assert rescale.choose(src2, {"dim": 3}) == ({"dim": 5}, "")


def test_rescale_not_applicable_names_the_reason():
    assert "no module-level int" in rescale.choose("def get_inputs():\n  return []\n", {})[1]
    src = "x = 4\ndef get_inputs():\n    return [torch.randn(2, 2)]\n"
    assert "uses no module-level int constant" in rescale.choose(src, {"x": 4})[1]


@pytest.mark.parametrize("message,status", [
    ("worker 'python' load: import_error: SyntaxError: invalid syntax", "import_error"),
    ("load: compile_error: Error building extension 'm'", "compile_error"),
    ("load: init_error: candidate_code ModelNew(): TypeError", "error"),
    ("no result within 300 ms; worker pid 4 killed by kcv", "timeout"),
    ("the worker process (pid 9) died of signal 11 (SIGSEGV)", "crash"),
    ("something else", "error"),
])
def test_load_errors_map_to_store_statuses(message, status):
    assert statuses.status_of_load_error(message) == status


def test_out_of_memory_is_recognised():
    assert statuses.is_out_of_memory("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate")
    assert statuses.is_out_of_memory("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when "
                                     "calling `cublasCreate(handle)`")
    assert not statuses.is_out_of_memory("ValueError: bad shape")


def test_combine_prefers_fail_then_error_then_pass():
    p = verdicts.record("CMP-01", "strict", "pass", worst_ratio=0.5, probe="a")
    e = verdicts.record("CMP-01", "strict", "error", "judge failed", probe="b")
    f = verdicts.record("CMP-01", "strict", "fail", "too far", worst_ratio=9.0, probe="c")
    assert verdicts.combine([p, e])["verdict"] == "error"
    out = verdicts.combine([p, e, f])
    assert out["verdict"] == "fail" and out["probe_token"] == "c"
    assert json.loads(out["evidence_json"])["probes"] == 3


def test_evidence_is_valid_json_with_nonfinite_numbers():
    r = verdicts.record("EXC-01", "strict", "fail", evidence={"candidate_value": float("nan"),
                                                             "ratio_quantiles": [1.0, float("inf")]})
    assert json.loads(r["evidence_json"])["candidate_value"] == "nan"


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


def test_profiles_map_to_their_eager_tf32_flags():
    assert error_model.tf32_flags("strict") == (0, 0)
    assert error_model.tf32_flags("cuda-default") == (0, 0)
    assert error_model.tf32_flags("fast-math") == (0, 0)
    assert error_model.tf32_flags("pytorch-eager") == (1, 0)  # PyTorch's own defaults
    assert error_model.tf32_flags("triton-default") == (1, 1)
    with pytest.raises(ValueError, match="profile"):
        error_model.tf32_flags("no-such-profile")
    assert error_model.extra_flag_sets(["strict", "fast-math"]) == []
    assert error_model.extra_flag_sets(
        ["pytorch-eager", "strict", "triton-default", "pytorch-eager"]) == [(1, 0), (1, 1)]


def test_profile_scale_is_the_larger_eager_error_and_never_tightens_tau():
    rng = np.random.default_rng(1)
    y = rng.standard_normal(200)
    u = error_model.unit_roundoff("f32")
    strict_eager = y + 3 * u * rng.standard_normal(200)
    tf32_eager = y + 2.0**-11 * rng.standard_normal(200)  # a TF32-sized error
    t_strict = error_model.tau(y, strict_eager, "f32")
    t_eager = error_model.tau(y, strict_eager, "f32", eager_profile=tf32_eager)
    big_e = max(error_model.eager_error(y, strict_eager, "f32"),
                error_model.eager_error(y, tf32_eager, "f32"))
    np.testing.assert_array_equal(t_eager, u * np.abs(y) + error_model.C_EAGER * big_e)
    assert np.all(t_eager >= t_strict) and np.any(t_eager > t_strict)
    # equal E's (on the CPU the flag runs are the flags-off run): equal tau
    np.testing.assert_array_equal(
        error_model.tau(y, strict_eager, "f32", eager_profile=strict_eager.copy()), t_strict)
    # a profile run with a smaller error never tightens the strict scale
    np.testing.assert_array_equal(error_model.tau(y, strict_eager, "f32", eager_profile=y), t_strict)
    entry = error_model.oracle_entry("f32", y, strict_eager, tf32_eager)
    np.testing.assert_array_equal(entry["declared"], tf32_eager)


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
    from kcv.audit.orchestrator import AuditOptions, order_todo, read_rows

    assert _shard("0/4, 0/2,0/1") == "0/4,0/2,0/1"
    with pytest.raises(argparse.ArgumentTypeError, match="0 <= i < n"):
        _shard("0/4,2/2")

    class Store:  # read_rows only records malformed rows in it
        def __init__(self):
            self.malformed = []

        def record_malformed(self, file, line, kernel_id, message, corpus, run_id):
            self.malformed.append(kernel_id)

    sample = str(Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl")
    store = Store()
    rows = read_rows(AuditOptions(corpora=[sample], store="", shard="0/2,0/1"), store, 1)
    first = {r["id"] for r in _core.read_corpus(sample, "0/2")[0]}
    everything = {r["id"] for r in _core.read_corpus(sample, "0/1")[0]}
    assert 0 < len(first) < len(everything)  # the sample splits, so the order is tested
    assert [r["id"] for r in rows if r["shard_rank"] == 0] == [
        r["id"] for r in rows if r["id"] in first]
    assert sorted(r["id"] for r in rows) == sorted(everything)  # each row once
    assert store.malformed == ["sample/cpu/L1/P8"]
    again = Store()  # a shard listed twice: its rows and its malformed row count once
    rows_twice = read_rows(AuditOptions(corpora=[sample], store="", shard="0/1,0/1"), again, 1)
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
    from kcv.audit.orchestrator import AuditOptions, read_rows

    class Store:
        def __init__(self):
            self.malformed = []

        def record_malformed(self, file, line, kernel_id, message, corpus, run_id):
            self.malformed.append((line, kernel_id))

    corpus = tmp_path / "broken.jsonl"
    corpus.write_text("not json\n{broken\n")
    store = Store()
    assert read_rows(AuditOptions(corpora=[str(corpus)], store="", shard="0/1,0/1"), store, 1) == []
    assert [line for line, _ in store.malformed] == [1, 2]  # two rows, once each


def test_memory_gate_makes_a_kernel_wait_until_its_estimate_fits():
    import threading
    import time

    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    assert estimate_host_bytes(10, 1) == 11 * 10 + 26 * 1
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
                          reservation=None):
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
    opts = orchestrator.AuditOptions(corpora=[sample], store=str(tmp_path / "a.db"), jobs=2,
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
    lost = set(ids)  # the first run loses every kernel (an error of ours: each stays `running`)

    def fake_audit_kernel(row, cfg, timings=None, alone=False, may_postpone=False,
                          reservation=None):
        if row["id"] in lost:
            raise RuntimeError("lost")
        return {"kernel_id": row["id"], "status": "ok", "replica_verdict": "accepted",
                "message": "", "verdicts": []}

    monkeypatch.setattr(orchestrator, "audit_kernel", fake_audit_kernel)
    store = str(tmp_path / "a.db")
    first = orchestrator.run_audit(orchestrator.AuditOptions(
        corpora=[sample], store=store, jobs=2, progress=False))
    assert first["left"] == first["statuses"]["running"] > 2, first  # the sample's valid rows
    lost = {broken}
    summary = orchestrator.run_audit(orchestrator.AuditOptions(
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


def test_allclose_takes_a_scalar_output():
    # a loss returns a 0-d tensor; the in-place steps must not turn it into a numpy scalar
    for dtype, np_dtype in (("f32", np.float32), ("f64", np.float64)):
        ref = np.array(2.0, np_dtype)
        assert replica.allclose_like_torch(ref, np.array(2.0, np_dtype), dtype)[0]
        ok, why, diff = replica.allclose_like_torch(ref, np.array(3.0, np_dtype), dtype)
        assert not ok and "at element 0:" in why and diff == 1.0
    bf16_two = np.array(0x4000, np.uint16)  # 2.0 as a bf16 bit pattern
    assert replica.allclose_like_torch(np.array(2.0, np.float32), bf16_two, "bf16")[0]


def test_allclose_in_place_is_the_plain_expression():
    # allclose_like_torch works in place; it must decide as torch.allclose's plain expression
    rng = np.random.default_rng(5)
    for dtype, np_dtype in (("f32", np.float32), ("f64", np.float64)):
        for _ in range(20):
            ref = rng.standard_normal(257).astype(np_dtype)
            cand = (ref + rng.standard_normal(257) * rng.choice([1e-4, 1e-2, 0.3])).astype(np_dtype)
            cand[rng.integers(0, 257, 3)] = rng.choice([np.inf, -np.inf, 0.0])
            ref[rng.integers(0, 257, 2)] = np.inf
            work = np_dtype
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(ref - cand)
                plain = (np.isinf(ref) & (ref == cand)) | (
                    diff <= work(replica.ATOL) + work(replica.RTOL) * np.abs(cand))
            ok, why, _ = replica.allclose_like_torch(ref, cand, dtype)
            assert ok == bool(plain.all())
            if not ok:
                bad = int(np.argmax(~plain.ravel()))
                assert f"at element {bad}:" in why and f"({int((~plain).sum())} elements)" in why
