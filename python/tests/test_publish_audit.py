"""scripts/publish-audit: the published store keeps every kernel and verdict but no worker
stderr tail (they quote the corpus's code), in kernel messages, verdict reasons or evidence,
and the report is written from it. Needs the kcv program (CTest passes it as KCV_TEST_CLI)."""

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

core = pytest.importorskip("kcv._core")

ROOT = Path(__file__).resolve().parents[2]
MARKER = "the worker's stderr ended with:"
TAIL = MARKER + "\n  File \"candidate.py\", line 3\n    __global__ void leaked_kernel()"


def kernel(i):
    return {"kernel_id": f"pub/L1/P{i}", "corpus": "pub", "level": 1, "problem_id": i,
            "problem_name": f"{i}_relu", "language": "cuda", "op_class": "elementwise"}


def make_store(path):
    store = core.Store(str(path))
    run = store.begin_run({"profiles": ["strict"], "shard": "0/1"})
    store.enqueue([kernel(1), kernel(2)])
    store.record({"kernel_id": "pub/L1/P1", "status": "compile_error",
                  "message": "candidate: build failed; " + TAIL}, run)
    store.record({"kernel_id": "pub/L1/P2", "status": "crash", "message": "candidate crashed",
                  "verdicts": [{"gate": "RES-01", "profile": "strict", "verdict": "fail",
                                "reason": "crash; " + TAIL,
                                "evidence_json": json.dumps({"summary": "call 0: " + TAIL})},
                               {"gate": "CMP-01", "profile": "strict", "verdict": "pass",
                                "reason": "", "evidence_json": json.dumps(
                                    {"rescale": {"reason": "the reference fails: " + TAIL}})}]},
                 run)
    store.finish_run(run)
    del store


def test_publish_cuts_every_stderr_tail_and_keeps_the_rest(tmp_path):
    cli = os.environ.get("KCV_TEST_CLI")
    if not cli:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    make_store(tmp_path / "audit.db")
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    for name in ("cuda_l1", "kernelbench_runs_a", "triton_kernelbench"):
        (corpora / f"{name}.jsonl").write_text("")
    out = tmp_path / "published"
    res = subprocess.run(["bash", str(ROOT / "scripts/publish-audit"), str(tmp_path / "audit.db"),
                          str(out)], env={**os.environ, "KCV": cli, "KCV_CORPORA": str(corpora)},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr + res.stdout
    db = sqlite3.connect(out / "merged.db")
    statuses = dict(db.execute("SELECT kernel_id, status FROM kernels"))
    assert statuses == {"pub/L1/P1": "compile_error", "pub/L1/P2": "crash"}
    (msg,) = db.execute("SELECT message FROM kernels WHERE kernel_id = 'pub/L1/P1'").fetchone()
    assert msg.startswith("candidate: build failed; ") and "not published" in msg
    reason, evidence = db.execute("SELECT reason, evidence FROM verdicts "
                                  "WHERE gate = 'RES-01'").fetchone()
    assert reason.startswith("crash; ") and json.loads(evidence)["summary"].startswith("call 0: ")
    (nested,) = db.execute("SELECT evidence FROM verdicts WHERE gate = 'CMP-01'").fetchone()
    assert json.loads(nested)["rescale"]["reason"].startswith("the reference fails: ")
    for text in [msg, reason, evidence, nested, *(p.read_text() for p in out.glob("report.*"))]:
        assert "leaked_kernel" not in text and MARKER not in text
    assert (out / "report.html").stat().st_size > 0
