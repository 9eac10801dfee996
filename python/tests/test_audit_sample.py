"""End to end on the bundled sample corpus (examples/kernelbench/README.md says what each row
is): `python -m kcv.audit` in a subprocess on the CPU, then the store is read back. The correct
candidates pass every applicable gate; each broken one fails the gate it targets while the
KernelBench replica accepts it; the syntax error and the malformed row get their statuses and
the audit goes on."""

import json
import os

import pytest

from audit_helpers import SAMPLE, run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

PROFILES = ("strict", "pytorch-eager")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("audit") / "sample.db")
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--jobs", "2", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return core.Store(path)


def gates(store, kernel_id, profile="strict"):
    return {v["gate"]: v for v in store.verdicts(kernel_id) if v["profile"] == profile}


def kernel(store, kernel_id):
    k = store.kernel(kernel_id)
    assert k is not None, kernel_id
    return k


def test_every_row_is_final(store):
    ks = {k["kernel_id"]: k["status"] for k in store.kernels()}
    assert len(ks) == 8
    assert store.todo() == []


@pytest.mark.parametrize("kernel_id", ["sample/cpu/L1/P1", "sample/cpu/L1/P5"])
def test_correct_candidates_pass_every_applicable_gate(store, kernel_id):
    k = kernel(store, kernel_id)
    assert k["status"] == "ok", k["message"]
    assert k["replica_verdict"] == "accepted"
    for profile in PROFILES:
        g = gates(store, kernel_id, profile)
        assert len(g) == 12
        bad = {n: (v["verdict"], v["reason"]) for n, v in g.items()
               if v["verdict"] not in ("pass", "not_applicable")}
        assert not bad, bad
        for name in ("CMP-01", "CMP-02", "CMP-03", "ORD-02", "EXC-01", "RES-01"):
            assert g[name]["verdict"] == "pass", (name, g[name])


@pytest.mark.parametrize("kernel_id,gate", [
    ("sample/cpu/L1/P2", "CMP-01"),  # shape-specialized
    ("sample/cpu/L1/P3", "CMP-02"),  # mutates its input
    ("sample/cpu/L1/P4", "EXC-01"),  # drops NaN
    ("sample/cpu/L1/P6", "CMP-03"),  # stride-blind
])
def test_broken_candidates_fail_their_gate_and_pass_the_replica(store, kernel_id, gate):
    k = kernel(store, kernel_id)
    assert k["status"] == "ok", k["message"]
    assert k["replica_verdict"] == "accepted", k["message"]
    for profile in PROFILES:
        v = gates(store, kernel_id, profile)[gate]
        assert v["verdict"] == "fail", v
        assert v["probe_token"]


def test_shape_specialization_is_reported_at_the_rescaled_shape(store):
    v = gates(store, "sample/cpu/L1/P2")["CMP-01"]
    ev = json.loads(v["evidence_json"])
    assert "batch_size=3" in json.dumps(ev)


def test_syntax_error_is_an_import_error_and_malformed_row_is_recorded(store):
    k = kernel(store, "sample/cpu/L1/P7")
    assert k["status"] == "import_error"
    assert "SyntaxError" in k["message"] or "syntax" in k["message"].lower()
    assert store.verdicts("sample/cpu/L1/P7") == []
    m = kernel(store, "sample/cpu/L1/P8")
    assert m["status"] == "malformed"
    assert "level" in m["message"]


def test_store_integrity(store):
    assert store.integrity_check() == "ok"


def test_several_processes_reach_the_same_verdicts(store, tmp_path):
    """--procs 2 deals the kernels to two orchestrator processes on one store; with every input
    over --alone-input-gb, each child defers two of its kernels and the launcher's last child
    runs them alone. Every kernel ends as in the one-process store, with the same verdicts."""
    ids = ["sample/cpu/L1/P1", "sample/cpu/L1/P3", "sample/cpu/L1/P4", "sample/cpu/L1/P7"]
    path = str(tmp_path / "procs.db")
    timings = tmp_path / "timings.jsonl"
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--jobs", "2", "--procs", "2",
                     "--ids", *ids, "--alone-input-gb", "1e-9", "--timings", str(timings))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "over 2 processes" in proc.stderr
    assert proc.stderr.count("runs alone at the end") == 3  # P7 fails to import before that
    assert "[4/4]" in proc.stderr  # one progress display counts every child's kernels
    lines = [json.loads(x) for x in timings.read_text().splitlines()]
    assert sorted(x["kernel_id"] for x in lines) == sorted(ids)  # every child appends its own
    ok = [x for x in lines if x["status"] == "ok"]
    assert len(ok) == 3
    for x in ok:  # where the time went, per kind of work
        assert x["cost_judge"] > 0 and x["cost_candidate"] > 0 and x["cost_ref_f64"] > 0
        assert x["cost_start_candidate"] > 0 and x["battery"] > 0
    other = core.Store(path)
    assert other.todo() == []
    import sqlite3

    versions = [r[0] for r in sqlite3.connect(path).execute("SELECT generator_version FROM runs")]
    assert len(versions) == 4  # the launcher, two children, the child that runs deferred kernels
    assert all(v.startswith("kcv.audit/1") for v in versions)
    assert sum(v.endswith("; launcher of 2 processes") for v in versions) == 1
    for kernel_id in ids:
        mine, theirs = other.kernel(kernel_id), store.kernel(kernel_id)
        assert (mine["status"], mine["replica_verdict"]) == \
            (theirs["status"], theirs["replica_verdict"]), kernel_id
        key = lambda vs: sorted((v["gate"], v["profile"], v["verdict"]) for v in vs)  # noqa: E731
        assert key(other.verdicts(kernel_id)) == key(store.verdicts(kernel_id)), kernel_id


def test_the_banded_error_scale_gives_the_sample_the_same_verdicts(store, tmp_path):
    """--error-scale banded on the sample (no output of wide dynamic range): every verdict as
    under the global scale, and the run records which scale judged it."""
    import sqlite3

    ids = ["sample/cpu/L1/P1", "sample/cpu/L1/P4", "sample/cpu/L1/P5", "sample/cpu/L1/P6"]
    path = str(tmp_path / "banded.db")
    proc = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--jobs", "2", "--no-progress",
                     "--error-scale", "banded", "--ids", *ids)
    assert proc.returncode == 0, proc.stderr[-4000:]
    banded = core.Store(path)
    key = lambda vs: sorted((v["gate"], v["profile"], v["verdict"]) for v in vs)  # noqa: E731
    for kernel_id in ids:
        assert key(banded.verdicts(kernel_id)) == key(store.verdicts(kernel_id)), kernel_id
    del banded
    versions = [r[0] for r in sqlite3.connect(path).execute("SELECT generator_version FROM runs")]
    assert versions and all(v.endswith("; error scale banded") for v in versions)
    # resuming that store under the default (global) scale is refused, before any kernel runs
    again = run_audit(SAMPLE, "--store", path, "--device", "cpu", "--no-progress",
                      "--ids", "sample/cpu/L1/P2")
    assert again.returncode == 2
    assert "judged under the banded error scale" in again.stderr
    assert core.Store(path).kernel("sample/cpu/L1/P2") is None
