"""kill -9 / resume (issue 3 item 7): `python -m kcv.audit` on the sample is SIGKILLed right
after its first kernel is recorded, then run again to the end. Every kernel ends final exactly
once: kernels finished before the kill keep their status, verdicts and run (they are not redone,
attempts stays 1), and the kernel that was running when the audit died is redone. No process of
the killed run outlives it (its workers, warm parents and sandboxes)."""

import os
import signal
import sqlite3
import subprocess
import time

import pytest

from audit_helpers import SAMPLE, audit_command, child_env, processes_mentioning, run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

# The statuses a kernel that ran ends with (not the malformed row, recorded as it is read).
FINAL_RUN = ("('ok','crash','timeout','compile_error','import_error','error','runtime_error',"
             "'bad_output','reference_error','environment')")
# Two kernels that run (so one is recorded and the next one is cut), the import error and the
# malformed row: the whole path in a fraction of the sample's time.
IDS = ["sample/cpu/L1/P1", "sample/cpu/L1/P3", "sample/cpu/L1/P7", "sample/cpu/L1/P8"]
ARGS = ["--store", None, "--device", "cpu", "--jobs", "1", "--no-progress", "--ids", *IDS]


def args(path):
    return [SAMPLE] + [path if a is None else a for a in ARGS]


def finished(path):
    if not os.path.exists(path):
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(f"SELECT count(*) FROM kernels WHERE status IN {FINAL_RUN}").fetchone()[0]
    except sqlite3.Error:
        return 0


def snapshot(store):
    out = {}
    for k in store.kernels():
        if k["status"] not in ("pending", "running"):
            vs = sorted((v["gate"], v["profile"], v["verdict"], v["reason"]) for v in store.verdicts(k["kernel_id"]))
            out[k["kernel_id"]] = (k["status"], k["run_id"], k["attempts"], vs)
    return out


def test_kill_minus_9_then_resume_loses_nothing_and_redoes_nothing(tmp_path):
    path = str(tmp_path / "resume.db")
    marker = f"KCV_TEST_RUN={os.getpid()}-{time.monotonic_ns()}"  # inherited by every descendant
    env = child_env()
    env[marker.split("=")[0]] = marker.split("=")[1]
    proc = subprocess.Popen(audit_command(*args(path)),
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900
    try:
        while finished(path) < 1:
            assert proc.poll() is None, "the audit ended before a kernel was recorded"
            assert time.monotonic() < deadline, "no kernel recorded in time"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30  # SIGKILL and pipe ends reach them at once; exits take a moment
    while left := processes_mentioning(str(tmp_path), marker):
        assert time.monotonic() < deadline, f"processes of the killed audit still run: {left}"
        time.sleep(0.2)

    before = snapshot(core.Store(path))
    done_before = {k: v for k, v in before.items() if v[0] != "malformed"}
    assert 1 <= len(done_before) < 3
    pending = [k["kernel_id"] for k in core.Store(path).kernels() if k["status"] in ("pending", "running")]
    assert pending, "the kill came after the last kernel"

    again = run_audit(*args(path))
    assert again.returncode == 0, again.stderr[-4000:]
    store = core.Store(path)
    after = snapshot(store)
    assert store.todo() == []
    assert len(after) == len(IDS)
    for kid, state in done_before.items():
        assert after[kid] == state, kid  # same status, run, attempts (1) and verdicts
        assert state[2] == 1
    for kid in pending:
        assert after[kid][0] not in ("running", "pending")
        assert after[kid][1] != done_before[next(iter(done_before))][1]  # finished by the second run
    assert store.integrity_check() == "ok"
    # what the four rows are (examples/kernelbench/README.md): a resumed store judges them as a
    # fresh one does
    assert {k: v[0] for k, v in after.items()} == {
        "sample/cpu/L1/P1": "ok", "sample/cpu/L1/P3": "ok", "sample/cpu/L1/P7": "import_error",
        "sample/cpu/L1/P8": "malformed"}
    cmp02 = [v for v in after["sample/cpu/L1/P3"][3] if v[0] == "CMP-02"]
    assert cmp02 and all(v[2] == "fail" for v in cmp02)
