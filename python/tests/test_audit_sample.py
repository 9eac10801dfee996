"""End to end on the bundled sample corpus (examples/kernelbench/README.md says what each row
is): `python -m kcv.audit` in a subprocess on the CPU, every profile, then the store is read
back. The correct candidates pass every applicable gate under every profile; each broken one is
accepted by KernelBench's own check (the replica) and failed by the gate that targets its defect,
with the finding that names it, under every profile; the syntax error and the malformed row get
their statuses and the audit goes on. The gates a defect also trips (P2's reshape fails every
other shape, P3's in-place relu_ every probe that checks its inputs) are pinned too, so a change
in what the pipeline sees shows here. --procs gives the same verdicts, and a store judged by
another generator of verdicts is refused."""

import json
import sqlite3

import pytest

from audit_helpers import SAMPLE, run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit.orchestrator import GENERATOR_VERSION  # noqa: E402

PROFILES = ("strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager")
GATES = ("CMP-01", "CMP-02", "CMP-03", "ORD-01", "ORD-02", "ORD-03", "EXC-01", "EXC-02",
         "PRC-01", "PRC-02", "RES-01", "RES-02")
P = "sample/cpu/L1/P"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("audit") / "sample.db")
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--jobs", "2", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return core.Store(path)


def gates(store, kernel_id, profile="strict"):
    return {v["gate"]: v for v in store.verdicts(kernel_id) if v["profile"] == profile}


def failing(store, kernel_id, profile):
    return {g: v["finding"] for g, v in gates(store, kernel_id, profile).items()
            if v["verdict"] == "fail"}


def kernel(store, kernel_id):
    k = store.kernel(kernel_id)
    assert k is not None, kernel_id
    return k


def test_every_row_is_final(store):
    ks = {k["kernel_id"]: k["status"] for k in store.kernels()}
    assert len(ks) == 8
    assert store.todo() == []
    assert store.verdict_generators() == [GENERATOR_VERSION]


@pytest.mark.parametrize("kernel_id", [P + "1", P + "5"])
def test_correct_candidates_pass_every_applicable_gate(store, kernel_id):
    k = kernel(store, kernel_id)
    assert k["status"] == "ok", k["message"]
    assert k["replica_verdict"] == "accepted"
    for profile in PROFILES:
        g = gates(store, kernel_id, profile)
        assert sorted(g) == sorted(GATES)
        bad = {n: (v["verdict"], v["reason"]) for n, v in g.items()
               if v["verdict"] not in ("pass", "not_applicable")}
        assert not bad, (profile, bad)
        for name in ("CMP-01", "CMP-02", "CMP-03", "ORD-02", "EXC-01", "RES-01"):
            assert g[name]["verdict"] == "pass", (profile, name, g[name])
        assert all(v["finding"] == "none" for v in g.values())


# (row, the gate the README names, its finding, its scope, every gate that fails)
BROKEN = [
    # reshape(16, -1): raises at any other batch, so every probe at another shape fails
    (P + "2", "CMP-01", "call_failed", "shape",
     {"CMP-01": "call_failed", "ORD-01": "call_failed", "PRC-02": "call_failed"}),
    # relu_(x): the input changes; a broadcast (expanded) input makes relu_ raise
    (P + "3", "CMP-02", "input_modified", "reference",
     {"CMP-02": "input_modified", "RES-01": "input_modified", "CMP-03": "call_failed"}),
    # nan_to_num: a NaN input gives a finite 0
    (P + "4", "EXC-01", "class_mismatch", "values", {"EXC-01": "class_mismatch"}),
    # reads the storage as if contiguous: wrong values on a transposed view
    (P + "6", "CMP-03", "value_over_bound", "layout", {"CMP-03": "value_over_bound"}),
]


@pytest.mark.parametrize("kernel_id,gate,finding,scope,fails", BROKEN,
                         ids=[b[0].rsplit("/", 1)[1] for b in BROKEN])
def test_broken_candidates_fail_their_gate_with_its_finding_and_pass_the_replica(
        store, kernel_id, gate, finding, scope, fails):
    k = kernel(store, kernel_id)
    assert k["status"] == "ok", k["message"]
    assert k["replica_verdict"] == "accepted", k["message"]
    for profile in PROFILES:
        v = gates(store, kernel_id, profile)[gate]
        assert (v["verdict"], v["finding"], v["scope"]) == ("fail", finding, scope), (profile, v)
        assert v["probe_token"]
        assert failing(store, kernel_id, profile) == fails, profile


def test_shape_specialization_is_reported_at_another_shape(store):
    v = gates(store, P + "2")["CMP-01"]
    ev = json.loads(v["evidence_json"])
    assert ev["shape"]["batch_size"] != 16  # the reference shape's batch, which it bakes in
    assert "shape '[16, -1]' is invalid" in ev["summary"]


def test_the_nan_drop_names_the_element_and_both_classes(store):
    ev = json.loads(gates(store, P + "4")["EXC-01"]["evidence_json"])
    assert ev["candidate_value"] == 0.0 and ev["oracle_value"] == "nan"
    assert ev["worst_index"] >= 0 and "finite (0) where the oracle is NaN" in ev["summary"]


def test_syntax_error_is_an_import_error_and_malformed_row_is_recorded(store):
    k = kernel(store, P + "7")
    assert k["status"] == "import_error"
    assert k["message"].startswith("the candidate: ") and "SyntaxError" in k["message"]
    assert k["replica_verdict"] == "rejected"  # KernelBench's check rejects it too
    assert store.verdicts(P + "7") == []
    m = kernel(store, P + "8")
    assert m["status"] == "malformed"
    assert "level" in m["message"]


def test_the_outcome_keeps_the_traced_facts(store):
    k = kernel(store, P + "1")
    assert k["op_class"] == "matmul" and k["determinism_declared"] is True
    facts = json.loads(k["facts"])
    assert {c["name"] for c in facts["constants"]} >= {"batch_size"}
    assert len(facts["trial_seeds"]) == 5  # KernelBench's five trials
    assert kernel(store, P + "6")["op_class"] == "elementwise"


def test_store_integrity(store):
    assert store.integrity_check() == "ok"


def test_several_processes_reach_the_same_verdicts(store, tmp_path):
    """--procs 2 deals the kernels to two orchestrator processes on one store; with every input
    over --alone-input-gb, each child defers its kernels (sizing, which needs only the
    reference, comes first) and the launcher's last child runs them alone. Every kernel ends as
    in the one-process store, with the same verdicts."""
    ids = [P + "1", P + "3", P + "4", P + "7"]
    path = str(tmp_path / "procs.db")
    timings = tmp_path / "timings.jsonl"
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--jobs", "2", "--procs", "2",
                     "--ids", *ids, "--alone-input-gb", "1e-9", "--timings", str(timings))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "over 2 processes" in proc.stderr
    assert proc.stderr.count("runs alone at the end") == 4  # P7's reference sizes: deferred too
    assert "[4/4]" in proc.stderr  # one progress display counts every child's kernels
    lines = [json.loads(x) for x in timings.read_text().splitlines()]
    assert sorted(x["kernel_id"] for x in lines) == sorted(ids)  # every child appends its own
    ok = [x for x in lines if x["status"] == "ok"]
    assert len(ok) == 3
    for x in ok:  # where the time went, per stage
        assert x["size"] > 0 and x["load"] > 0 and x["replica"] > 0 and x["gates"] > 0
        assert x["total"] >= x["size"] + x["load"]
    other = core.Store(path)
    assert other.todo() == []
    versions = [r[0] for r in sqlite3.connect(path).execute("SELECT generator_version FROM runs")]
    assert len(versions) == 4  # the launcher, two children, the child that runs deferred kernels
    assert all(v.startswith(GENERATOR_VERSION) for v in versions)
    assert sum(v.endswith("; launcher of 2 processes") for v in versions) == 1
    key = lambda vs: sorted((v["gate"], v["profile"], v["verdict"], v["finding"]) for v in vs)  # noqa: E731
    for kernel_id in ids:
        mine, theirs = other.kernel(kernel_id), store.kernel(kernel_id)
        assert (mine["status"], mine["replica_verdict"]) == \
            (theirs["status"], theirs["replica_verdict"]), kernel_id
        assert key(other.verdicts(kernel_id)) == key(store.verdicts(kernel_id)), kernel_id


def test_a_store_judged_by_another_generator_is_refused_before_any_kernel_runs(tmp_path):
    path = str(tmp_path / "old.db")
    old = core.Store(path)
    run = old.begin_run({"generator_version": "kcv.audit/1 (the Python battery)"})
    old.enqueue([{"kernel_id": "old/1", "corpus": "old", "level": 1, "problem_id": 1,
                  "problem_name": "1_old", "language": "torch"}])
    old.record({"kernel_id": "old/1", "status": "ok", "verdicts": [
        {"gate": "CMP-01", "profile": "strict", "verdict": "pass"}]}, run)
    old.finish_run(run)
    del old
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--no-progress",
                     "--ids", P + "1")
    assert proc.returncode == 2, proc.stderr[-4000:]
    assert "judged by kcv.audit/1 (the Python battery)" in proc.stderr
    assert "Use a fresh --store" in proc.stderr
    assert core.Store(path).kernel(P + "1") is None
