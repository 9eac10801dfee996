"""Shared helpers of the test_audit*.py files: where the sample corpus is, and how to run
`python -m kcv.audit` in a subprocess that imports the same kcv as the tests."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "examples", "kernelbench", "sample.jsonl")
CORPORA = os.path.join(os.path.dirname(REPO), "shared", "corpora")


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env.pop("TRITON_INTERPRET", None)
    return env


def audit_command(*args) -> list:
    return [sys.executable, "-m", "kcv.audit", *args]


def run_audit(*args, timeout=1200) -> subprocess.CompletedProcess:
    return subprocess.run(audit_command(*args), env=child_env(), capture_output=True, text=True,
                          timeout=timeout)
