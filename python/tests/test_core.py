"""Tests of kcv._core, the verifier core bound for the Python orchestrator: the C++ gate judges on
synthetic calls (verdicts that must pass and must fail), CallRecord conversions (bf16 as uint16
bits, float16), the audit Store's round trip and resume semantics and its v2 fields (a verdict's
finding and scope, an outcome's op_class, determinism_declared and facts, each refused by name
when bad), verify_module on one sample row (its outcome dict, and that the store keeps what it
says), the corpus reader on a small malformed file, and Worker against a tiny fake worker written here (docs/06: ok, strided and
broadcast inputs, crash, timeout, input mutation, unwritten outputs, wrong kernel name) and, when
this build's kcv-worker and bundled kernels are found, against the C++ worker."""

import json
import os
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")


# ---------------------------------------------------------------------------------------------
# judge


def oracle(values, tau, dtype="f32", declared=None):
    values = np.asarray(values, dtype=np.float64)
    return {"dtype": dtype, "shape": values.shape, "value": values,
            "tau": np.broadcast_to(np.asarray(tau, dtype=np.float64), values.shape),
            "declared": declared}


def ok_call(*outputs):
    return core.CallRecord(status="ok", outputs=[np.asarray(o) for o in outputs])


X = [("x", np.linspace(-1, 1, 8, dtype=np.float32))]
Y = np.linspace(-1, 1, 8)


def test_cmp01_passes_within_tau():
    r = core.judge("CMP-01", calls=[ok_call((Y + 5e-4).astype(np.float32))],
                   oracle=[oracle(Y, 1e-3)], inputs=X)
    assert r["verdict"] == "pass", r["summary"]
    assert 0.4 < r["worst_ratio"] < 0.6
    assert len(r["ratio_quantiles"]) == 4


def test_cmp01_fails_beyond_tau_and_names_the_element():
    cand = Y.astype(np.float32)
    cand[5] += 0.01
    r = core.judge("CMP-01", calls=[ok_call(cand)], oracle=[oracle(Y, 1e-3)], inputs=X, label="t")
    assert r["verdict"] == "fail"
    assert r["worst_index"] == 5 and r["violations"] == 1
    assert r["worst_ratio"] > 9
    assert r["probe_label"] == "t"


def test_cmp03_is_the_numeric_judge_too():
    cand = Y.astype(np.float32) + np.float32(0.01)
    r = core.judge("CMP-03", calls=[ok_call(cand)], oracle=[oracle(Y, 1e-3)], inputs=X)
    assert r["verdict"] == "fail" and r["violations"] == 8


def test_a_crashed_call_fails_with_its_status():
    crash = core.CallRecord(status="crash", message="died of signal 11")
    r = core.judge("CMP-01", calls=[crash], oracle=[oracle(Y, 1e-3)], inputs=X)
    assert r["verdict"] == "fail"
    assert "crash" in r["summary"] and "signal 11" in r["summary"]


def test_cmp02_fails_on_a_mutated_input():
    rec = ok_call(Y.astype(np.float32))
    assert core.judge("CMP-02", calls=[rec], oracle=[oracle(Y, 1e-3)], inputs=X)["verdict"] == "pass"
    rec.inputs_unchanged = False
    rec.mutated_input = 0
    rec.first_mutated_input_elem = 3
    r = core.judge("CMP-02", calls=[rec], oracle=[oracle(Y, 1e-3)], inputs=X)
    assert r["verdict"] == "fail" and "in0 modified" in r["summary"]


def test_exc01_fails_when_the_nan_mask_differs():
    want = Y.copy()
    want[2] = np.nan
    cand = Y.astype(np.float32)
    r = core.judge("EXC-01", calls=[ok_call(cand)], oracle=[oracle(want, 1e-3)], inputs=X,
                   injections=[(0, 2, "nan")])
    assert r["verdict"] == "fail"
    assert r["worst_index"] == 2 and "NaN" in r["summary"]
    cand[2] = np.nan
    r = core.judge("EXC-01", calls=[ok_call(cand)], oracle=[oracle(want, 1e-3)], inputs=X)
    assert r["verdict"] == "pass", r["summary"]


def test_exc02_fails_when_a_subnormal_result_is_flushed():
    want = np.full(4, 1e-40)  # an fp32 subnormal
    cand = np.zeros(4, dtype=np.float32)
    tiny = np.float32(1e-40)
    r = core.judge("EXC-02", calls=[ok_call(cand)], oracle=[oracle(want, 0.0)],
                   inputs=[("x", np.full(4, tiny))])
    assert r["verdict"] == "fail" and "subnormal result(s) read as zero" in r["summary"], r
    r = core.judge("EXC-02", calls=[ok_call(np.full(4, tiny))], oracle=[oracle(np.float64(tiny) * np.ones(4), 0.0)],
                   inputs=[("x", np.full(4, tiny))])
    assert r["verdict"] == "pass", r["summary"]


def test_ord02_fails_on_a_one_bit_difference():
    a = Y.astype(np.float32)
    b = a.copy()
    assert core.judge("ORD-02", calls=[ok_call(a), ok_call(b)], oracle=[oracle(Y, 1e-3)], inputs=X,
                      repetitions=2)["verdict"] == "pass"
    b[6] = np.nextafter(b[6], np.float32(2))
    r = core.judge("ORD-02", calls=[ok_call(a), ok_call(b)], oracle=[oracle(Y, 1e-3)], inputs=X,
                   repetitions=2)
    assert r["verdict"] == "fail" and r["worst_index"] == 6


def test_ord02_does_not_apply_without_declared_determinism():
    r = core.judge("ORD-02", calls=[ok_call(Y.astype(np.float32))], oracle=[oracle(Y, 1e-3)], inputs=X,
                   contract_json='{"deterministic": false}')
    assert r["verdict"] == "not_applicable" and "determinism" in r["reason"]


def test_prc01_fails_on_bf16_precision_in_an_f32_output():
    rng = np.random.default_rng(1)
    y = rng.standard_normal(256)
    exact = y.astype(np.float32)
    truncated = (exact.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    inputs = [("x", y.astype(np.float32))]
    good = core.judge("PRC-01", calls=[ok_call(exact)], oracle=[oracle(y, np.abs(y) * 2.0**-10)], inputs=inputs)
    bad = core.judge("PRC-01", calls=[ok_call(truncated)], oracle=[oracle(y, np.abs(y) * 2.0**-10)], inputs=inputs)
    assert good["verdict"] == "pass", good["summary"]
    assert bad["verdict"] == "fail" and bad["bits_lost"] > 10


def test_prc01_on_a_reduction_needs_the_declared_simulation():
    r = core.judge("PRC-01", calls=[ok_call(Y.astype(np.float32))], oracle=[oracle(Y, 1e-3)], inputs=X,
                   op_class="reduction")
    assert r["verdict"] == "error" and "declared" in r["reason"]
    r = core.judge("PRC-01", calls=[ok_call(Y.astype(np.float32))],
                   oracle=[oracle(Y, 1e-3, declared=Y.astype(np.float32).astype(np.float64))], inputs=X,
                   op_class="reduction")
    assert r["verdict"] == "pass", r["summary"]


def test_a_float32_declared_value_judges_as_its_float64_widening():
    # kcv._core.judge widens a float32 `declared` itself (no numpy float64 temporary): the same
    # verdict and evidence as the float64 array, for contiguous, strided, NaN and signed zeros.
    rng = np.random.default_rng(3)
    y = rng.standard_normal(512)
    y[:4] = [0.0, -0.0, np.nan, np.inf]
    eager = (y * (1 + rng.standard_normal(512) * 1e-6)).astype(np.float32)
    cand = (y * (1 + rng.standard_normal(512) * 3e-6)).astype(np.float32)
    strided = np.repeat(eager, 2)[::2]
    assert not strided.flags["C_CONTIGUOUS"]
    inputs = [("x", y.astype(np.float32))]
    for declared in (eager, strided):
        got = [core.judge(gate, calls=[ok_call(cand)], inputs=inputs, op_class="reduction",
                          oracle=[oracle(y, np.abs(y) * 1e-5, declared=d)])
               for gate in ("PRC-01", "CMP-01") for d in (declared, declared.astype(np.float64))]
        assert got[0] == got[1] and got[2] == got[3]
        assert got[0]["verdict"] in ("pass", "fail") and got[0]["verdict"] != "error", got[0]


def test_res01_fails_on_a_guard_write_and_on_guard_dependent_results():
    a = Y.astype(np.float32)
    calls = [ok_call(a), ok_call(a), ok_call(a)]
    assert core.judge("RES-01", calls=calls, oracle=[oracle(Y, 1e-3)], inputs=X, repetitions=3)["verdict"] == "pass"
    calls[1].guards_intact = False
    calls[1].first_guard_violation = 32
    r = core.judge("RES-01", calls=calls, oracle=[oracle(Y, 1e-3)], inputs=X, repetitions=3)
    assert r["verdict"] == "fail" and "guard" in r["summary"]
    moved = a.copy()
    moved[7] += 1
    r = core.judge("RES-01", calls=[ok_call(a), ok_call(moved)], oracle=[oracle(Y, 1e-3)], inputs=X)
    assert r["verdict"] == "fail" and r["worst_index"] == 7


def test_ord01_and_prc02_do_not_apply_to_elementwise_ops():
    for gate in ("ORD-01", "PRC-02"):
        r = core.judge(gate, calls=[ok_call(Y.astype(np.float32))], oracle=[oracle(Y, 1e-3)], inputs=X)
        assert r["verdict"] == "not_applicable"


def test_an_inconsistent_oracle_is_an_error_not_a_verdict():
    bad = oracle(Y, 1e-3)
    bad["tau"] = np.ones(3)
    r = core.judge("CMP-01", calls=[ok_call(Y.astype(np.float32))], oracle=[bad], inputs=X)
    assert r["verdict"] == "error"


def test_judge_arguments_are_checked():
    with pytest.raises(ValueError, match="gate"):
        core.judge("XYZ-9", calls=[], oracle=[], inputs=[])
    with pytest.raises(ValueError, match="RES-02"):
        core.judge("RES-02", calls=[], oracle=[], inputs=[])
    with pytest.raises(ValueError, match="op_class"):
        core.judge("CMP-01", calls=[], oracle=[oracle(Y, 1)], inputs=X, op_class="bogus")
    with pytest.raises(ValueError, match="bogus"):
        core.judge("CMP-01", calls=[], oracle=[oracle(Y, 1)], inputs=X, contract_json='{"bogus": 1}')
    with pytest.raises(ValueError, match="injections"):
        core.judge("EXC-01", calls=[], oracle=[oracle(Y, 1)], inputs=X, injections=[(0, 1, "nope")])


# ---------------------------------------------------------------------------------------------
# CallRecord


def test_call_record_outputs_keep_dtypes_and_bits():
    bf16 = np.array([0x3F80, 0x7FC1, 0x0001], dtype=np.uint16)
    half = np.array([1.5, -0.0, 65504], dtype=np.float16)
    ints = np.arange(6, dtype=np.int64).reshape(2, 3)
    rec = core.CallRecord(outputs=[bf16, half, ints, np.array([True, False])])
    out = rec.outputs
    assert [o.dtype for o in out] == [np.uint16, np.float16, np.int64, np.bool_]
    assert out[0].tobytes() == bf16.tobytes()
    assert out[1].tobytes() == half.tobytes()
    assert out[2].shape == (2, 3) and (out[2] == ints).all()
    assert rec.status == "ok" and rec.inputs_unchanged and rec.all_written
    with pytest.raises(ValueError, match="status"):
        core.CallRecord(status="fine")
    with pytest.raises(ValueError, match="int16"):
        core.CallRecord(outputs=[np.zeros(2, dtype=np.int16)])


# ---------------------------------------------------------------------------------------------
# Store


def kernel(i, **kw):
    return {"kernel_id": f"test/run/L1/P{i}", "corpus": "test", "level": 1, "problem_id": i,
            "problem_name": f"p{i}", "language": "triton", "op_class": "elementwise", **kw}


def test_store_round_trip_and_resume(tmp_path):
    path = str(tmp_path / "audit.db")
    store = core.Store(path)
    run = store.begin_run({"kcv_version": core.version, "seed": 7, "profiles": ["strict"],
                           "command_line": "test", "shard": "0/1"})
    store.enqueue([kernel(1), kernel(2, original_verdict="accepted")])
    store.enqueue([kernel(1)])  # already there: unchanged
    assert store.todo() == ["test/run/L1/P1", "test/run/L1/P2"]
    store.mark_running("test/run/L1/P1", run)
    store.mark_running("test/run/L1/P2", run)
    store.record({"kernel_id": "test/run/L1/P1", "status": "ok", "replica_verdict": "accepted",
                  "verdicts": [{"gate": "CMP-01", "profile": "strict", "verdict": "fail",
                                "reason": "", "worst_ratio": 3.5, "evidence_json": "{}",
                                "probe_token": "{\"gate\":\"CMP-01\"}"},
                               {"gate": "ORD-02", "profile": "strict", "verdict": "pass"}]}, run)
    assert store.todo() == ["test/run/L1/P2"]
    row = store.kernel("test/run/L1/P1")
    assert row["status"] == "ok" and row["replica_verdict"] == "accepted" and row["attempts"] == 1
    assert row["info"]["problem_name"] == "p1" and row["problem_name"] == "p1"
    assert store.kernel("nope") is None
    assert store.kernel("test/run/L1/P2")["original_verdict"] == "accepted"
    vs = {v["gate"]: v for v in store.verdicts("test/run/L1/P1")}
    assert vs["CMP-01"]["worst_ratio"] == 3.5 and vs["ORD-02"]["worst_ratio"] is None
    assert [p["gate"] for p in store.failing_probes("test/run/L1/P1")] == ["CMP-01"]
    store.finish_run(run)
    del store

    # Resume: the kernel left running is still to do; the finished one is not redone.
    store = core.Store(path)
    assert store.todo() == ["test/run/L1/P2"]
    assert store.kernel("test/run/L1/P2")["status"] == "running"
    assert store.integrity_check() == "ok"
    assert len(store.kernels()) == 2


def test_store_rejects_bad_records(tmp_path):
    store = core.Store(str(tmp_path / "audit.db"))
    run = store.begin_run({})
    store.enqueue([kernel(1)])
    with pytest.raises(core.InvalidArgumentError, match="final"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "running"}, run)
    with pytest.raises(core.NotFoundError, match="not in the store"):
        store.record({"kernel_id": "test/run/L1/P9", "status": "ok"}, run)
    with pytest.raises(ValueError, match="colour"):
        store.enqueue([{"kernel_id": "x", "colour": "red"}])
    with pytest.raises(ValueError, match="kernel_id"):
        store.enqueue([{"corpus": "x"}])
    with pytest.raises(ValueError, match="status"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "great"}, run)


def test_store_records_malformed_rows_as_final(tmp_path):
    store = core.Store(str(tmp_path / "audit.db"))
    run = store.begin_run({})
    store.record_malformed("c.jsonl", 3, "bad/row", "level: expected an integer", "test", run)
    row = store.kernel("bad/row")
    assert row["status"] == "malformed" and "level" in row["message"]
    assert store.todo() == []


def test_store_keeps_findings_scopes_op_class_determinism_and_facts(tmp_path):
    store = core.Store(str(tmp_path / "audit.db"))
    run = store.begin_run({"generator_version": "test"})
    store.enqueue([kernel(1, op_class="", determinism_declared=True), kernel(2)])
    facts = {"constants": [{"name": "batch_size", "value": 8, "get_inputs": True, "init": False}],
             "trial_seeds": [1, 2, 3, 4, 5]}
    store.record({"kernel_id": "test/run/L1/P1", "status": "ok", "replica_verdict": "accepted",
                  "op_class": "reduction", "determinism_declared": False,
                  "facts": json.dumps(facts),
                  "verdicts": [{"gate": "EXC-01", "profile": "strict", "verdict": "fail",
                                "finding": "class_mismatch", "scope": "values"},
                               {"gate": "CMP-03", "profile": "strict", "verdict": "fail",
                                "finding": "value_over_bound", "scope": "layout"},
                               {"gate": "CMP-01", "profile": "strict", "verdict": "pass"}]}, run)
    row = store.kernel("test/run/L1/P1")
    # the traced reference's class and determinism replace what the corpus row said
    assert row["op_class"] == "reduction" and row["determinism_declared"] is False
    assert json.loads(row["facts"]) == facts
    vs = {v["gate"]: (v["finding"], v["scope"]) for v in store.verdicts("test/run/L1/P1")}
    assert vs == {"EXC-01": ("class_mismatch", "values"), "CMP-03": ("value_over_bound", "layout"),
                  "CMP-01": ("none", "reference")}  # the defaults
    # an outcome without them keeps the row's own and an empty facts object
    store.record({"kernel_id": "test/run/L1/P2", "status": "ok"}, run)
    other = store.kernel("test/run/L1/P2")
    assert other["op_class"] == "elementwise" and json.loads(other["facts"] or "{}") == {}


def test_store_names_a_bad_finding_scope_or_facts(tmp_path):
    store = core.Store(str(tmp_path / "audit.db"))
    run = store.begin_run({})
    store.enqueue([kernel(1)])
    one = {"gate": "CMP-01", "profile": "strict", "verdict": "fail"}
    with pytest.raises(ValueError, match=r"outcome.verdicts\[0\].finding"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "ok",
                      "verdicts": [dict(one, finding="wrong_vibes")]}, run)
    with pytest.raises(ValueError, match=r"outcome.verdicts\[1\].scope"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "ok",
                      "verdicts": [one, dict(one, gate="CMP-02", scope="everywhere")]}, run)
    with pytest.raises(ValueError, match="unknown field 'colour'"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "ok", "colour": "red"}, run)
    with pytest.raises((RuntimeError, ValueError), match="facts"):
        store.record({"kernel_id": "test/run/L1/P1", "status": "ok", "facts": "{not json"}, run)
    assert store.kernel("test/run/L1/P1")["status"] == "pending"  # nothing half-recorded
    assert store.verdicts("test/run/L1/P1") == []


@pytest.fixture(scope="module")
def module_outcome(tmp_path_factory, warm_servers):
    """verify_module on the sample's P4 (nan_to_num: EXC-01 fails), strict only, no shrinking;
    here and below every worker forks from the reference role's warm parent."""
    pytest.importorskip("torch")
    sample = Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl"
    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    row = next(r for r in rows if r["id"] == "sample/cpu/L1/P4")
    lines = []
    out = core.verify_module(row, worker_command=warm_servers.command("reference", None),
                             device="cpu", cache_dir=str(tmp_path_factory.mktemp("cache")),
                             memory_limit_bytes=32 << 30, profiles=["strict"], shrink=False,
                             progress=lines.append)
    return row, out, lines


def test_verify_module_returns_the_store_outcome_with_timings(module_outcome):
    row, out, lines = module_outcome
    assert sorted(out) == ["determinism_declared", "facts", "kernel_id", "message", "op_class",
                           "out_of_memory", "replica_verdict", "status", "timings", "verdicts"]
    assert (out["kernel_id"], out["status"], out["replica_verdict"]) == (row["id"], "ok", "accepted")
    assert out["out_of_memory"] is False and out["op_class"] == "elementwise"
    assert set(out["timings"]) >= {"load", "replica", "gates", "total"}
    assert len(out["verdicts"]) == 12 and {v["profile"] for v in out["verdicts"]} == {"strict"}
    exc = next(v for v in out["verdicts"] if v["gate"] == "EXC-01")
    assert (exc["verdict"], exc["finding"], exc["scope"]) == ("fail", "class_mismatch", "values")
    assert json.loads(out["facts"])["trial_seeds"]
    assert any(line.startswith(row["id"] + ": ") for line in lines)  # progress lines
    with pytest.raises(ValueError, match="profiles"):
        core.verify_module(row, worker_command=["false"], profiles=["nope"])


def _sample_p4():
    sample = Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl"
    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    return next(r for r in rows if r["id"] == "sample/cpu/L1/P4")


def test_a_started_reference_is_adopted_once_and_judges_the_same(module_outcome, tmp_path,
                                                                  warm_servers):
    """start_reference + verify_module(reference=...) loads the reference once (the timings say
    so) and gives the verdicts the plain call gave; the handle is spent afterwards."""
    row, plain, _ = module_outcome
    options = dict(worker_command=warm_servers.command("reference", None), device="cpu",
                   cache_dir=str(tmp_path), memory_limit_bytes=32 << 30, size_on_meta_over=1 << 30)
    started = core.start_reference(row, **options)
    assert started.reply["problem"].get("sized_on_meta") is not True
    out = core.verify_module(row, **options, profiles=["strict"], shrink=False, reference=started)
    assert out["timings"].get("reference_adopted") == 1
    assert [(v["gate"], v["verdict"], v["reason"]) for v in out["verdicts"]] == \
        [(v["gate"], v["verdict"], v["reason"]) for v in plain["verdicts"]]
    with pytest.raises(ValueError, match="closed or given"):
        started.reply  # noqa: B018 - the property raises


def test_a_started_reference_of_another_load_is_closed_not_adopted(tmp_path, warm_servers):
    """A reference started at other constants (or other worker options) is not the one the
    kernel's reference would be: verify_module closes it and starts its own."""
    pytest.importorskip("torch")
    row = _sample_p4()
    options = dict(worker_command=warm_servers.command("reference", None), device="cpu",
                   cache_dir=str(tmp_path), memory_limit_bytes=32 << 30)
    consts = core.start_reference(row, **options).reply["problem"]["constants"]
    name = next(iter(consts))
    other = core.start_reference(row, **options, constants={name: consts[name] + 1})
    out = core.verify_module(row, **options, profiles=["strict"], shrink=False, reference=other)
    assert "reference_adopted" not in out["timings"] and out["status"] == "ok"


def record_in_fresh_store(tmp_path, row, outcome):
    store = core.Store(str(tmp_path / "audit.db"))
    run = store.begin_run({})
    store.enqueue([{"kernel_id": row["id"], "corpus": "sample", "level": 1, "problem_id": 4,
                    "problem_name": "4_SiLU", "language": "torch"}])
    store.record(outcome, run)
    return store


def test_verify_modules_outcome_without_its_two_extras_is_what_the_store_keeps(
        module_outcome, tmp_path):
    # what the orchestrator records: audit_kernel takes "timings" out, Auditor "out_of_memory"
    row, out, _ = module_outcome
    kept = {k: v for k, v in out.items() if k not in ("timings", "out_of_memory")}
    store = record_in_fresh_store(tmp_path, row, kept)
    k = store.kernel(row["id"])
    assert (k["status"], k["replica_verdict"], k["op_class"]) == ("ok", "accepted", "elementwise")
    assert k["determinism_declared"] == out["determinism_declared"]
    assert json.loads(k["facts"]) == json.loads(out["facts"])
    key = lambda vs: sorted((v["gate"], v["profile"], v["verdict"], v["finding"], v["scope"],  # noqa: E731
                             v["probe_token"]) for v in vs)
    assert key(store.verdicts(row["id"])) == key(out["verdicts"])


def test_the_orchestrators_keys_are_not_the_stores(module_outcome, tmp_path):
    """verify_module's 'timings' and 'out_of_memory' are the orchestrator's: the store refuses
    them by name (a typo in an outcome must not be written silently)."""
    row, out, _ = module_outcome
    with pytest.raises(ValueError, match="timings"):
        record_in_fresh_store(tmp_path, row, dict(out))


# ---------------------------------------------------------------------------------------------
# corpus and contracts


def row(i, **kw):
    r = {"id": f"test/x/L1/P{i}", "corpus": "test", "source_repo": "r", "source_commit": "c",
         "source_path": "p", "level": 1, "problem_id": i, "problem_name": f"p{i}",
         "reference_version": "v0", "reference_code": "# ref", "candidate_code": "# cand",
         "language": "triton", "model": None, "original_harness": "h", "original_verdict": None,
         "original_speedup": None, "original_hardware": None}
    r.update(kw)
    return json.dumps(r)


def test_read_corpus_reports_malformed_lines_and_goes_on(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([row(1), row(2, level="one"), "{not json", "", row(3, original_speedup=1.5)]) + "\n")
    rows, errors = core.read_corpus(str(path))
    assert [r["problem_id"] for r in rows] == [1, 3]
    assert rows[1]["original_speedup"] == 1.5 and rows[0]["model"] is None
    assert [(e["line"], e["id"]) for e in errors] == [(2, "test/x/L1/P2"), (3, "")]
    assert "level" in errors[0]["message"]
    a, ea = core.read_corpus(str(path), "0/2")
    b, eb = core.read_corpus(str(path), "1/2")
    assert sorted(r["id"] for r in a + b) == sorted(r["id"] for r in rows)
    assert len(ea) + len(eb) == 2
    with pytest.raises(ValueError, match="shard"):
        core.read_corpus(str(path), "3/2")
    with pytest.raises(RuntimeError):
        core.read_corpus(str(tmp_path / "missing.jsonl"))


def test_parse_contract_normalises_and_names_bad_fields():
    text = core.parse_contract('{"op": "add", "inputs": ["float32", "f32"]}')
    c = json.loads(text)
    assert c["op"] == "add" and c["inputs"] == ["f32", "f32"] and c["profile"] == "strict"
    with pytest.raises(ValueError, match="colour"):
        core.parse_contract('{"colour": 1}')


# ---------------------------------------------------------------------------------------------
# Worker against a fake worker (docs/06)

FAKE_WORKER = textwrap.dedent('''
    import json, mmap, os, sys, time
    import numpy as np
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out = os.fdopen(reply_fd, "w", buffering=1)
    DT = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16,
          "i32": np.int32, "i64": np.int64, "bool": np.bool_}

    def view(mm, d):
        dt = np.dtype(DT[d["dtype"]])
        return np.ndarray(tuple(d["shape"]), dtype=dt, buffer=mm, offset=d["raw"][0] + d["offset"],
                          strides=tuple(s * dt.itemsize for s in d["strides"]))

    def send(obj):
        out.write(json.dumps(obj) + "\\n")

    for line in sys.stdin:
        req = json.loads(line)
        t = req["type"]
        if t == "hello":
            send({"type": "hello", "protocol": 1, "worker": "fake worker",
                  "capabilities": {"load_kinds": ["fake"], "concurrent_calls": False}})
        elif t == "load":
            send({"type": "loaded", "name": req["name"], "op": "kernelbench", "contract": None,
                  "echo": req, "problem": {"outputs": [{"dtype": "f32", "shape": [4]}]}})
        elif t == "call":
            mode = int(req["params"].get("mode", 0))
            if mode == 1:
                os._exit(3)
            if mode == 2:
                time.sleep(60)
            if mode == 4:
                send({"type": "result", "id": req["id"], "status": "exception", "message": "ValueError: no"})
                continue
            fd = os.open(req["shm"]["path"], os.O_RDWR)
            mm = mmap.mmap(fd, req["shm"]["size"])
            ins = [view(mm, d) for d in req["inputs"]]
            outs = [view(mm, d) for d in req["outputs"]]
            if mode != 5:
                outs[0][...] = ins[0] * 2
            if mode == 3:
                ins[0].reshape(-1)[0] = 42
            del ins, outs
            mm.close()
            os.close(fd)
            send({"type": "result", "id": req["id"], "status": "ok"})
        elif t == "shutdown":
            send({"type": "bye"})
            break
''')


@pytest.fixture
def fake_worker(tmp_path):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    workers = []

    def make(load=None, name="fake.double", **kw):
        w = core.Worker([sys.executable, str(script)], load or {"kind": "fake"}, name=name, **kw)
        workers.append(w)
        return w

    yield make
    for w in workers:
        w.close()


def test_worker_start_returns_the_whole_load_reply(fake_worker):
    w = fake_worker({"kind": "fake", "role": "candidate", "seed": 3})
    info = w.start()
    assert info["name"] == "fake.double" and info["op"] == "kernelbench" and info["pid"] > 0
    assert info["worker"] == "fake worker"
    assert info["reply"]["echo"]["role"] == "candidate" and info["reply"]["echo"]["seed"] == 3
    assert info["reply"]["problem"]["outputs"][0]["shape"] == [4]
    assert w.workers_started == 1


def test_worker_runs_on_strided_broadcast_and_offset_views(fake_worker):
    w = fake_worker()
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    views = {"strided": base[:, 1:9:2], "broadcast": np.broadcast_to(base[0, :4], (4, 4)),
             "offset": base.reshape(-1)[3:19].reshape(4, 4), "transposed": base[:4, :4].T}
    for what, x in views.items():
        rec = w.run([("x", x)], [("f32", (4, 4))])
        assert rec.status == "ok", (what, rec.message)
        assert rec.inputs_unchanged and rec.guards_intact and rec.all_written, what
        np.testing.assert_array_equal(rec.outputs[0], 2 * np.asarray(x), err_msg=what)
    assert w.workers_started == 1


def test_worker_crash_becomes_a_record_and_the_worker_restarts(fake_worker):
    w = fake_worker()
    x = [("x", np.ones(4, dtype=np.float32))]
    rec = w.run(x, [("f32", (4,))], params={"mode": 1})
    assert rec.status == "crash" and "exit code 3" in rec.message
    assert w.run(x, [("f32", (4,))]).status == "ok"
    assert w.workers_started == 2


def test_worker_timeout_kills_the_worker(fake_worker):
    w = fake_worker()
    rec = w.run([("x", np.ones(4, dtype=np.float32))], [("f32", (4,))], params={"mode": 2}, timeout_ms=300)
    assert rec.status == "timeout" and "300 ms" in rec.message


def test_worker_input_mutation_and_unwritten_outputs_are_detected(fake_worker):
    w = fake_worker()
    x = np.arange(8, dtype=np.float32)[::2]
    rec = w.run([("x", x)], [("f32", (4,))], params={"mode": 3})
    assert rec.status == "ok" and not rec.inputs_unchanged
    assert rec.mutated_input == 0 and rec.first_mutated_input_elem == 0
    rec = w.run([("x", x)], [("f32", (4,))], params={"mode": 5})
    assert not rec.all_written and rec.unwritten_output == 0 and rec.first_unwritten == 0
    rec = w.run([("x", x)], [("f32", (4,))], params={"mode": 4})
    assert rec.status == "exception" and "ValueError: no" in rec.message


def test_worker_refuses_a_worker_that_loaded_another_kernel(fake_worker):
    w = fake_worker({"kind": "fake", "name": "someone.else"}, name="fake.double")
    rec = w.run([("x", np.ones(4, dtype=np.float32))], [("f32", (4,))])
    assert rec.status == "bad_output" and "not the candidate" in rec.message


def test_workers_on_threads_run_at_once(fake_worker):
    ws = [fake_worker() for _ in range(3)]
    results = [None] * 3

    def go(i):
        results[i] = ws[i].run([("x", np.full(4, i, dtype=np.float32))], [("f32", (4,))])

    threads = [threading.Thread(target=go, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, rec in enumerate(results):
        assert rec.status == "ok" and (rec.outputs[0] == 2 * i).all()


def test_worker_errors(fake_worker, tmp_path):
    with pytest.raises(ValueError, match="kind"):
        core.Worker([sys.executable], {}, name="x")
    w = core.Worker([str(tmp_path / "no-such-worker")], {"kind": "fake"}, name="x", startup_timeout_ms=5000)
    with pytest.raises(RuntimeError, match="no-such-worker"):
        w.start()
    rec = w.run([("x", np.ones(2, dtype=np.float32))], [("f32", (2,))])
    assert rec.status == "crash" and "could not be started" in rec.message
    w.close()
    with pytest.raises(core.InvalidArgumentError, match="closed"):
        w.run([], [])
    with pytest.raises(ValueError, match="negative"):
        fake_worker().run([("x", np.arange(4, dtype=np.float32)[::-1])], [("f32", (4,))])


# ---------------------------------------------------------------------------------------------
# Worker against this build's kcv-worker and bundled kernels (libkcv_examples.so)


def build_artifact(env, relative):
    if os.environ.get(env):
        return Path(os.environ[env])
    return Path(core.__file__).resolve().parents[2] / relative  # <build>/python/kcv/_core*.so


KCV_WORKER = build_artifact("KCV_TEST_WORKER", "kcv-worker")
EXAMPLES = build_artifact("KCV_TEST_EXAMPLES", "examples/libkcv_examples.so")
needs_cpp_worker = pytest.mark.skipif(not (KCV_WORKER.exists() and EXAMPLES.exists()),
                                      reason="this build's kcv-worker / libkcv_examples.so not found")


def cpp_worker(kernel, op):
    return core.Worker([str(KCV_WORKER)], {"kind": "shared_library", "path": str(EXAMPLES), "kernel": kernel},
                       name=kernel, op=op)


@needs_cpp_worker
def test_cpp_worker_runs_a_strided_add_and_the_judge_passes_it():
    base = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    x, y = base[:, ::2], base[:8, :].T
    want = x.astype(np.float64) + y
    with cpp_worker("control.add_strided", "add") as w:
        assert w.start()["reply"]["name"] == "control.add_strided"
        rec = w.run([("x", x), ("y", y)], [("f32", (16, 8))])
    assert rec.status == "ok", rec.message
    r = core.judge("CMP-02", calls=[rec], oracle=[oracle(want, np.abs(want) * 2.0**-24)],
                   inputs=[("x", x), ("y", y)])
    assert r["verdict"] == "pass", r["summary"]


@needs_cpp_worker
def test_cpp_worker_contiguity_assumption_passes_cmp02_and_fails_cmp03():
    # CMP-02 is structural only (docs/decisions/0001): a value read wrongly through a view is
    # CMP-03's finding
    base = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    x, y = base[:, ::2], base[:, 8:]
    want = x.astype(np.float64) + y
    with cpp_worker("redteam.cmp03.contiguity_assumed", "add") as w:
        rec = w.run([("x", x), ("y", y)], [("f32", (16, 8))])
    ora = [oracle(want, np.abs(want) * 2.0**-24)]
    r = core.judge("CMP-02", calls=[rec], oracle=ora, inputs=[("x", x), ("y", y)])
    assert r["verdict"] == "pass", r["summary"]
    r = core.judge("CMP-03", calls=[rec], oracle=ora, inputs=[("x", x), ("y", y)])
    assert r["verdict"] == "fail" and r["worst_ratio"] > 1, r["summary"]


@needs_cpp_worker
def test_cpp_worker_write_past_end_breaks_the_guard():
    x = np.ones((4, 8), dtype=np.float32)
    with cpp_worker("redteam.res01.write_past_end", "add") as w:
        rec = w.run([("x", x), ("y", x)], [("f32", (4, 8))], randomize_guards=True, guard_seed=5)
    assert not rec.guards_intact
    r = core.judge("RES-01", calls=[rec], oracle=[oracle(2 * x, 0.0)], inputs=[("x", x), ("y", x)])
    assert r["verdict"] == "fail" and "wrote outside its buffers" in r["summary"], r["summary"]


def test_take_outputs_hands_over_the_buffers_as_arrays():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    rec = core.CallRecord(outputs=[a, a.astype(np.float16)[:, ::2], (a > 5)])
    got = rec.take_outputs()
    assert rec.outputs == []  # taken, not copied
    del rec
    assert [g.dtype for g in got] == [np.float32, np.float16, np.bool_]
    assert np.array_equal(got[0], a) and np.array_equal(got[1], a.astype(np.float16)[:, ::2])
    assert np.array_equal(got[2], a > 5) and all(g.flags["C_CONTIGUOUS"] for g in got)
