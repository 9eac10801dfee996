"""The KernelBench-format calibration set (examples/kernelbench/calibration/) through the one
pipeline, on the CPU: every Triton (interpreter) and torch kernel gets the verdicts its case.json
expects under each profile it names, every planted defect is accepted by the replica (KernelBench's
own check) and failed by its gate with a finding, and every correct kernel passes every gate
under its declared profile. The CUDA kernels cannot run here; test_calibration_cuda.py
compile-checks them. calibration.jsonl must be what make_calibration.py builds from the
directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALIBRATION = os.path.join(REPO, "examples", "kernelbench", "calibration.jsonl")
MAKE = os.path.join(REPO, "examples", "kernelbench", "make_calibration.py")
PROFILES = ("strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager")

_core = pytest.importorskip("kcv._core")


def rows() -> list[dict]:
    with open(CALIBRATION, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def is_correct(row: dict) -> bool:
    """A correct kernel (ok_<name>/), not a planted defect (<GATE>_<defect>/)."""
    return "/ok_" in row["source_path"]


def gate_of(row: dict) -> str | None:
    return None if is_correct(row) else os.path.basename(os.path.dirname(row["source_path"]))[:6]


CPU_ROWS = [r for r in rows() if r["language"] in ("torch", "triton")]
_outcomes: dict = {}


def _verify(row: dict, servers) -> dict:
    return _core.verify_module(row, worker_command=servers.command("candidate", None),
                               reference_worker_command=servers.command("reference", None),
                               device="cpu",
                               cache_dir=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                      f"kcv-calibration-{os.getuid()}"),
                               profiles=list(PROFILES), call_timeout_s=120, kernel_timeout_s=900,
                               shrink=False)  # the verdicts do not depend on shrinking (tested elsewhere)


@pytest.fixture(scope="module")
def outcomes(warm_servers) -> dict:
    """Every CPU row verified once (two at a time: verify_module releases the GIL), its workers
    forked from warm parents as the audit's are: a cold worker spends most of a small row's time
    importing torch."""
    if not _outcomes:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for row, out in zip(CPU_ROWS, pool.map(lambda r: _verify(r, warm_servers), CPU_ROWS)):
                _outcomes[row["id"]] = out
    return _outcomes


def verdicts_of(out: dict) -> dict:
    return {(v["profile"], v["gate"]): v for v in out["verdicts"]}


def test_the_jsonl_is_built_from_the_directories(tmp_path):
    fresh = tmp_path / "calibration.jsonl"
    subprocess.run([sys.executable, MAKE, "--out", str(fresh)], check=True)
    assert fresh.read_text(encoding="utf-8") == open(CALIBRATION, encoding="utf-8").read(), \
        "calibration.jsonl is stale: run examples/kernelbench/make_calibration.py"


def test_the_set_covers_every_gate_twice_and_twelve_correct_kernels():
    by_gate: dict = {}
    for r in rows():
        by_gate.setdefault(gate_of(r), []).append(r["language"])
    gates = ("CMP-01", "CMP-02", "CMP-03", "ORD-01", "ORD-02", "ORD-03", "EXC-01", "EXC-02",
             "PRC-01", "PRC-02", "RES-01", "RES-02")
    for g in gates:
        assert len(by_gate.get(g, [])) >= 2, f"{g}: fewer than two planted defects"
    assert len(by_gate.get(None, [])) >= 12
    assert {"torch", "triton", "cuda"} <= {lang for langs in by_gate.values() for lang in langs}


@pytest.mark.parametrize("row", CPU_ROWS, ids=[r["id"] for r in CPU_ROWS])
def test_expected_verdicts(row, outcomes):
    out = outcomes[row["id"]]
    assert out["status"] == "ok", f"{row['id']}: status {out['status']}: {out['message']}"
    assert out["replica_verdict"] == "accepted", f"the replica must accept it: {out['message']}"
    got = verdicts_of(out)
    wrong = []
    for profile, gates in row["expect"].items():
        for gate, want in gates.items():
            v = got[(profile, gate)]
            ok = (v["verdict"] == want or
                  (want == "pass_or_na" and v["verdict"] in ("pass", "not_applicable")))
            if not ok:
                ev = json.loads(v["evidence_json"])
                wrong.append(f"{gate} under {profile}: {v['verdict']} ({v['finding']}), expected {want}: "
                             f"{v['reason'] or ev.get('summary', '')} [probe {ev.get('probe', '')}]")
            if v["verdict"] == "fail":
                assert v["finding"] != "none", f"{gate} under {profile} failed without a finding"
    assert not wrong, f"{row['id']}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("row", [r for r in CPU_ROWS if is_correct(r)],
                         ids=[r["id"] for r in CPU_ROWS if is_correct(r)])
def test_correct_kernels_pass_every_gate_under_their_profile(row, outcomes):
    profile = (row.get("contract") or {}).get("profile", "strict")
    bad = [f"{g}: {v['verdict']} {v['reason']}" for (p, g), v in verdicts_of(outcomes[row["id"]]).items()
           if p == profile and v["verdict"] in ("fail", "error")]
    assert not bad, f"{row['id']} under {profile}: " + "; ".join(bad)
