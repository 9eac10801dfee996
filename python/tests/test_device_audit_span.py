"""scripts/device-audit's detached mode (AUDIT_SPAN_S), on the CPU with the bundled sample: the
first call starts the audit in its own process session and returns while it runs, with a
one-file snapshot of the store; the next call attaches, waits for the end and writes the report;
a later call continues the store the machine holds instead of the seed. Needs the kcv program (CTest passes it as KCV_TEST_CLI)."""

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def device_audit(tmp_path, out_name, **env):
    out = tmp_path / out_name
    out.mkdir()
    base = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "OUT": str(out),
            "AUDIT_NO_INSTALL": "1", "AUDIT_CORPORA": str(ROOT / "examples/kernelbench"),
            "AUDIT_NAMES": "sample", "AUDIT_SPAN_DIR": str(tmp_path / "span"),
            "AUDIT_SHARD": "0/2, 0/1", "AUDIT_JOBS": "2", "AUDIT_TAIL_S": "5",
            "AUDIT_ARGS": "--device cpu", "PYTHONUNBUFFERED": "1"}
    res = subprocess.run(["bash", str(ROOT / "scripts/device-audit")], cwd=ROOT,
                         env={**base, **env}, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout, out


def statuses(db_path):
    db = sqlite3.connect(db_path)
    try:
        return dict(db.execute("SELECT kernel_id, status FROM kernels").fetchall())
    finally:
        db.close()


def kill_session(sid):
    """SIGKILL to every process of session `sid`: the span, and `timeout` with kcv audit and its
    workers, which sit in a process group of their own inside it."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    os.kill(int(entry), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def span_env(tmp_path):
    cli = os.environ.get("KCV_TEST_CLI")
    if not cli:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kcv").symlink_to(Path(cli).resolve())
    yield tmp_path
    pid_file = tmp_path / "span" / "pid"
    if pid_file.exists():  # a failed test must not leave the detached audit running
        kill_session(int(pid_file.read_text()))


def test_a_detached_audit_outlives_its_call_and_the_next_call_attaches(span_env):
    tmp = span_env
    seed = tmp / "empty.db"  # an empty store to start from, so call 1 need not wait for one
    store = core.Store(str(seed))
    del store
    # AUDIT_DEADLINE_S=26: the call returns a second after it starts the audit, which by then
    # has not finished a kernel, whatever the machine's speed
    # AUDIT_SPAN_S=1200: room for the sample on a loaded host; a call returns as soon as the
    # span ends, so a fast one loses nothing
    first, out1 = device_audit(tmp, "out1", AUDIT_SPAN_S="1200", AUDIT_DEADLINE_S="26",
                               AUDIT_SEED=str(seed))
    assert "store seeded from" in first and "started the detached audit" in first
    assert "still running" in first, first
    span_pid = int((tmp / "span" / "pid").read_text())
    assert os.getsid(span_pid) == span_pid  # a session of its own: it outlives the command
    # one self-contained file under $OUT: the snapshot is not left in WAL mode
    assert sorted(p.name for p in out1.iterdir() if p.name.startswith("audit.db")) == ["audit.db"]
    assert not (out1 / "report.txt").exists()

    second, out2 = device_audit(tmp, "out2", AUDIT_SPAN_S="1200", AUDIT_DEADLINE_S="1300")
    assert "attached to the audit" in second, second
    assert "span: ended" in second, second
    final = statuses(out2 / "audit.db")
    assert len(final) == 8 and not {"pending", "running"} & set(final.values()), final
    assert final["sample/cpu/L1/P8"] == "malformed"
    assert final["sample/cpu/L1/P7"] == "import_error"
    assert sum(s == "ok" for s in final.values()) == 6  # the six rows that load
    assert "kcv audit report" in (out2 / "report.txt").read_text()
    log = (out2 / "audit.log").read_text()
    assert "shard 0/2,0/1, " in log  # "0/2, 0/1" is the list (its order: unit tests)
    assert "done" in log.splitlines()[-1]

    # A later call on the same machine continues its store; the seed is for a fresh machine.
    bogus_seed = tmp / "seed.db"
    bogus_seed.write_text("not a store")
    third, out3 = device_audit(tmp, "out3", AUDIT_SPAN_S="60", AUDIT_DEADLINE_S="120",
                               AUDIT_SEED=str(bogus_seed))
    assert "continuing the store this machine holds" in third, third
    assert statuses(out3 / "audit.db") == final

    # A fetch-only call starts nothing once the audit has ended: it returns the store as it is.
    fourth, out4 = device_audit(tmp, "out4", AUDIT_SPAN_S="300", AUDIT_DEADLINE_S="60",
                                AUDIT_ATTACH_ONLY="1", AUDIT_SHARD="0/3")
    assert "AUDIT_ATTACH_ONLY" in fourth and "started" not in fourth, fourth
    assert statuses(out4 / "audit.db") == final


def test_a_detached_audit_that_kcv_audit_refuses_stops_at_once(span_env):
    """Exit 2 (bad arguments, a store judged by another generator of verdicts) is not retried."""
    out_text, out = device_audit(span_env, "out", AUDIT_SPAN_S="300", AUDIT_DEADLINE_S="120",
                                 AUDIT_ARGS="--device cpu --profiles nonsense")
    assert "span: ended" in out_text, out_text
    log = (out / "audit.log").read_text()
    assert "refused to run (exit 2" in log and log.count("kcv audit exit 2") == 1, log
