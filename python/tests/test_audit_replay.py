"""An audit failure replays from the store: `kcv replay --store` runs the recorded probe of a
kernel of examples/kernelbench/sample.jsonl again in fresh workers and says "reproduced" (exit 1,
as `kcv replay` does for a failure that reproduces); a verdict that is not a failure is refused
with exit 2. On the CPU, through the build's kcv (KCV_TEST_CLI)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "examples", "kernelbench", "sample.jsonl")
CLI = os.environ.get("KCV_TEST_CLI")

pytestmark = pytest.mark.skipif(not CLI, reason="KCV_TEST_CLI (the built kcv) is not set")


def run(*args):
    env = {**os.environ, "KCV_PYTHON": sys.executable}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=900)


def test_a_recorded_failure_replays(tmp_path):
    store = str(tmp_path / "s.db")
    audit = run("audit", SAMPLE, "--store", store, "--device", "cpu", "--ids", "sample/cpu/L1/P4",
                "--profiles", "strict", "--no-progress")
    assert audit.returncode == 0, audit.stderr
    db = sqlite3.connect(store)
    verdict, finding, token, evidence = db.execute(
        "SELECT verdict, finding, probe_token, evidence FROM verdicts WHERE kernel_id=? AND gate='EXC-01'",
        ("sample/cpu/L1/P4",)).fetchone()
    db.close()
    assert (verdict, finding) == ("fail", "class_mismatch")
    assert json.loads(token)["gate"] == "EXC-01"
    assert "worst_index" in json.loads(evidence)  # the minimal counterexample's position
    replay = run("replay", "--store", store, "--kernel", "sample/cpu/L1/P4", "--gate", "EXC-01",
                 "--corpus", SAMPLE, "--device", "cpu")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "reproduced: EXC-01 fails again" in replay.stdout
    refused = run("replay", "--store", store, "--kernel", "sample/cpu/L1/P4", "--gate", "CMP-02",
                  "--corpus", SAMPLE, "--device", "cpu")
    assert refused.returncode == 2
    assert "no failing CMP-02" in refused.stderr
