"""bench/audit/figures.py on real audits: three rows (two of the bundled sample and a candidate
that builds a library through torch's JIT path, torch.utils.cpp_extension.load) audited on the
CPU twice, cold (an empty --cache-dir) then warm (the same --cache-dir, a fresh store). The
cold run's timings record the candidate's build (`build`, `build_cached` 0), the warm run's the
same load served by the cache (`build_cached` 1); the figures print from both runs, with the
verdict diff of the two empty; a copy of the warm store with one verdict re-recorded otherwise
(through kcv's store, so it still verifies) makes `kcv diff` and the figures report it."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import kb_problems as kb
from audit_helpers import REPO, SAMPLE, audit_command, child_env

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

FIGURES = os.path.join(REPO, "bench", "audit", "figures.py")
SAMPLE_IDS = ("sample/cpu/L1/P1", "sample/cpu/L1/P3")

BUILDING = kb.ADD.replace("class Model(", "class ModelNew(").replace("import torch\n", '''import os
import torch
import torch.utils.cpp_extension as cpp

_root = os.environ["TORCH_EXTENSIONS_DIR"]
_src = os.path.join(_root, "figures_tiny.cpp")
if not os.path.exists(_src):
    os.makedirs(_root, exist_ok=True)
    with open(_src, "w") as f:
        f.write('extern "C" int kcv_figures_tiny() { return 7; }\\n')
cpp.load(name="kcv_figures_tiny", sources=[_src], is_python_module=False)
''', 1)


def kcv_cli() -> str:
    path = os.environ.get("KCV_TEST_CLI")
    if not path:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    return path


def audit(tmp, name, corpus, cache):
    store, timings = tmp / f"{name}.db", tmp / f"{name}.jsonl"
    args = [str(SAMPLE), str(corpus), "--store", str(store), "--device", "cpu", "--jobs", "2",
            "--profiles", "strict", "--no-progress", "--cache-dir", str(cache),
            "--timings", str(timings), "--ids", *SAMPLE_IDS, "builds"]
    done = subprocess.run(audit_command(*args), env=child_env(), capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return store, timings


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figures")
    corpus = tmp / "builds.jsonl"
    corpus.write_text(json.dumps({"id": "builds", "reference_code": kb.ADD,
                                  "candidate_code": BUILDING}) + "\n")
    cache = tmp / "cache"
    cold = audit(tmp, "cold", corpus, cache)
    warm = audit(tmp, "warm", corpus, cache)
    return tmp, cold, warm


def timings(path):
    with open(path, encoding="utf-8") as f:
        return {t["kernel_id"]: t for t in map(json.loads, f)}


def figures(*args):
    return subprocess.run([sys.executable, FIGURES, *map(str, args), "--kcv", kcv_cli()],
                          env=child_env(), capture_output=True, text=True, timeout=300)


def test_the_build_is_recorded_apart_from_the_battery(runs):
    _, (_, cold), (_, warm) = runs
    c, w = timings(cold), timings(warm)
    assert set(c) == set(w) == {*SAMPLE_IDS, "builds"}
    assert c["builds"]["status"] == "ok", c["builds"]
    assert c["builds"]["build_cached"] == 0 and 0 < c["builds"]["build"] <= c["builds"]["load"]
    assert c["builds"]["build_compiled"] == 1, c["builds"]
    assert w["builds"]["build_cached"] == 1 and w["builds"]["build_compiled"] == 0, w["builds"]
    for kid in SAMPLE_IDS:  # they build nothing
        assert "build" not in c[kid] and "build" not in w[kid]
        assert c[kid]["status"] == "ok" and c[kid]["gates"] > 0


def test_the_gates_time_is_split_by_step_and_by_gate(runs):
    _, (_, cold), _ = runs
    # each figure of a timings line is rounded to 1e-4 s on its own: a sum of n of them may
    # exceed the rounded whole by n * 5e-5
    def slack(n):
        return (n + 1) * 5e-5

    for kid, t in timings(cold).items():
        steps = [t[f"gates.{s}"] for s in ("inputs", "candidate", "oracle", "judge")]
        assert all(v >= 0 for v in steps) and t["gates.candidate"] > 0, t
        # the steps are parts of the gates' time; planning and bookkeeping are the rest
        assert sum(steps) <= t["gates"] + slack(len(steps)), t
        assert 0 <= t["gates.shrink"] <= sum(steps) + slack(len(steps)), t
        # the trusted result made beside the candidate's calls: the part they hid is no step
        assert 0 <= t["gates.oracle_beside"], t
        per_gate = {k: v for k, v in t.items() if k.startswith("gate.")}
        assert "gate.CMP-01" in per_gate, (kid, t)
        assert sum(per_gate.values()) <= t["gates"] + slack(len(per_gate)), t
        # the judges' time split by gate
        judges = {k: v for k, v in t.items() if k.startswith("judge.")}
        assert "judge.CMP-01" in judges, (kid, t)
        assert abs(sum(judges.values()) - t["gates.judge"]) <= slack(len(judges)) + 1e-3, t


def test_the_worker_calls_are_split_into_kcvs_share_and_the_workers(runs):
    _, (_, cold), _ = runs
    for kid, t in timings(cold).items():
        for role in ("reference", "candidate"):
            at = f"calls.{role}."
            assert t[at + "n"] >= 1, (kid, t)
            # the worker's task is part of the round trip, its forward part of the task (each
            # figure rounded to 1e-4 s on its own)
            assert 0 < t[at + "task"] <= t[at + "round_trip"] + 1e-4, (kid, role, t)
            assert 0 <= t[at + "forward"] <= t[at + "task"] + 1e-4, (kid, role, t)
            assert t[at + "prepare"] > 0 and t[at + "finish"] > 0, (kid, role, t)
        # both roles' runs report the model's forward (the candidate's: its forwards)
        assert t["calls.reference.forward"] > 0 and t["calls.candidate.forward"] > 0, t


def test_later_gates_read_the_first_probes_trusted_runs(runs):
    """Every gate probes the reference input first; from the second gate on, its trusted runs
    are the ones kept from the kernel's first probe (no stage, no reference run again)."""
    _, (_, cold), _ = runs
    for kid, t in timings(cold).items():
        assert t["oracle.reused"] >= 1, (kid, t)


def test_figures_of_a_cold_and_a_warm_run(runs):
    _, (cold_db, cold), (warm_db, warm) = runs
    done = figures("--cold", cold_db, cold, "--warm", warm_db, warm)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "1. battery per kernel, no builds (cold)" in out
    assert "1. battery per kernel, no builds (warm)" in out
    assert out.count("median of 3 kernel(s) at --jobs 2; left out: none") == 2, out
    assert out.count("where the battery's time goes") == 2, out
    assert "the candidate's calls (runner.run)" in out and "by gate (summed" in out, out
    assert "CMP-01" in out.split("by gate (summed", 1)[1], out
    assert out.count("of the inputs: kcv's transforms") == 2, out
    assert out.count("not in the steps: trusted result beside the calls") == 2, out
    assert out.count("the worker calls' split") == 2, out
    assert "reference: median" in out and "worker: the model's run" in out, out
    build = next(line for line in out.splitlines() if line.startswith("2. load_inline build"))
    assert "median of 1 kernel(s)" in build and "<= 15 s" in build, build
    assert "warm run: 0 load(s) built" in out
    assert "3. end to end (cold build cache)" in out and "3 of 3 kernel(s) final" in out
    assert "3. end to end (warm build cache)" in out and "INCOMPLETE" not in out
    assert "4. verdicts of the two runs: identical" in out
    assert "kernels final in both: 3" in out and "differences: 0" in out


def test_an_altered_store_makes_a_difference(runs):
    tmp, (cold_db, cold), (warm_db, warm) = runs
    altered = tmp / "altered.db"
    shutil.copyfile(warm_db, altered)
    if os.path.exists(f"{warm_db}-wal"):  # committed rows not yet folded into the .db
        shutil.copyfile(f"{warm_db}-wal", f"{altered}-wal")
    store = core.Store(str(altered))  # the copy keeps the store id, so the same key signs it
    k = store.kernel(SAMPLE_IDS[0])
    verdicts = store.verdicts(SAMPLE_IDS[0])
    flipped = next(v for v in verdicts if v["gate"] == "EXC-01")
    assert flipped["verdict"] == "pass"
    flipped.update(verdict="fail", finding="class_mismatch", scope="values",
                   reason="altered for the test")
    store.record({"kernel_id": SAMPLE_IDS[0], "status": k["status"], "message": k["message"],
                  "replica_verdict": k["replica_verdict"], "verdicts": verdicts},
                 k.get("run_id") or 1)
    del store
    diff = subprocess.run([kcv_cli(), "diff", str(cold_db), str(altered)], capture_output=True,
                          text=True, timeout=120)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    row = next(line for line in diff.stdout.splitlines() if line.startswith(SAMPLE_IDS[0]))
    assert row.split() == [SAMPLE_IDS[0], "verdict", "EXC-01", "strict", "pass", "fail",
                           "class_mismatch", "values"], diff.stdout
    assert "differences: 1" in diff.stdout and "B: altered for the test" in diff.stdout
    done = figures("--cold", cold_db, cold, "--warm", altered, warm)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4. verdicts of the two runs: DIFFERENT" in done.stdout


def test_a_load_that_compiled_nothing_is_left_out_of_the_build_median():
    """An entry not published whose build tree holds the library (an earlier load built it and
    then failed): the load's seconds are an import, not a build."""
    import importlib.util  # noqa: PLC0415
    spec = importlib.util.spec_from_file_location("kcv_bench_figures", FIGURES)
    fig = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fig  # dataclasses look their module up by name
    spec.loader.exec_module(fig)
    lines = [{"kernel_id": "a", "status": "ok", "jobs": 2, "build": 40.0, "build_cached": 0,
              "build_compiled": 1},
             {"kernel_id": "b", "status": "ok", "jobs": 2, "build": 0.001, "build_cached": 0,
              "build_compiled": 0},
             {"kernel_id": "c", "status": "ok", "jobs": 2, "build": 0.002, "build_cached": 1,
              "build_compiled": 0},
             {"kernel_id": "d", "status": "ok", "jobs": 2, "build": 30.0, "build_cached": 0}]
    m = fig.builds(fig.Run("cold", "", lines))
    assert m.over == 2 and m.seconds == 35.0, m
    assert m.excluded == {"load compiled nothing (its library was in place)": 1,
                          "build found in the cache": 1}, m.excluded
