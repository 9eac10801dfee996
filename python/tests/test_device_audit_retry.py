"""scripts/device-audit's AUDIT_RETRY, with and without AUDIT_RETRY_IDS: the kernels queued again
are those with the named statuses, and with an id file only those it lists (the big problems'
timeouts retried at a reduced shape while the light kernels' timeouts stay final). It goes
through kcv's store (Store.reset), so the store still verifies afterwards."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

core = pytest.importorskip("kcv._core")

ROOT = Path(__file__).resolve().parents[2]


def env_of(**extra) -> dict:
    path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    return {**os.environ, "KCV_PYTHON": sys.executable, "PYTHONPATH": path, **extra}


def retry(db: Path, statuses: str, ids_file: str = "") -> str:
    script = ('eval "$(sed -n \'/^retry_statuses() {/,/^}/p\' scripts/device-audit)"; '
              'retry_statuses "$1"')
    env = env_of(AUDIT_RETRY=statuses, AUDIT_RETRY_IDS=ids_file)
    res = subprocess.run(["bash", "-c", script, "retry", str(db)], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def store(tmp_path: Path) -> Path:
    db = tmp_path / "audit.db"
    s = core.Store(str(db))
    run = s.begin_run({})
    kernels = [("big/1", "timeout"), ("big/2", "ok"), ("light/1", "timeout"), ("light/2", "error")]
    s.enqueue([{"kernel_id": k, "row_hash": "0" * 64} for k, _ in kernels])
    for k, status in kernels:
        s.record({"kernel_id": k, "status": status}, run)
    return db


def statuses_of(db: Path) -> dict:
    assert core.Store(str(db), read_only=True).verify()["state"] == "verified"
    return dict(sqlite3.connect(db).execute("SELECT kernel_id, status FROM kernels"))


def test_retry_without_ids_queues_every_kernel_with_the_status(tmp_path):
    db = store(tmp_path)
    assert "retry: 2 kernel(s) with status timeout queued again" in retry(db, "timeout")
    assert statuses_of(db) == {"big/1": "pending", "big/2": "ok", "light/1": "pending",
                            "light/2": "error"}


def test_retry_ids_limit_it_to_the_listed_kernels(tmp_path):
    db = store(tmp_path)
    ids = tmp_path / "ids.txt"
    ids.write_text("# the big ones\nbig/1\nbig/2  # ok: not retried\n")
    out = retry(db, "timeout error", str(ids))
    assert f"retry: 1 kernel(s) with status timeout error among the {ids} ids" in out
    assert statuses_of(db) == {"big/1": "pending", "big/2": "ok", "light/1": "timeout",
                            "light/2": "error"}


def test_a_missing_ids_file_or_no_statuses_is_an_error_not_a_silent_run(tmp_path):
    db = store(tmp_path)
    script = ('eval "$(sed -n \'/^retry_statuses() {/,/^}/p\' scripts/device-audit)"; '
              'retry_statuses "$1"')
    for statuses, ids in (("timeout", str(tmp_path / "absent.txt")), ("", "ids.txt")):
        env = env_of(AUDIT_RETRY=statuses, AUDIT_RETRY_IDS=ids)
        res = subprocess.run(["bash", "-c", script, "retry", str(db)], cwd=ROOT, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 1 and res.stdout.startswith("retry: AUDIT_RETRY_IDS"), res
    assert statuses_of(db)["big/1"] == "timeout"
