"""The audit under attack, on the CPU path (docs/07_audit_store.md "Integrity", docs/08_audit.md
§5): each test does what an attacker did to an audit (a candidate that finds the store and
installs a trigger, one that kills the orchestrator, one whose worker dies during its load; a
person who rewrites, swaps or deletes finished rows with sqlite3; a corpus edited under the same
id, with a byte that is not UTF-8, or with a duplicate id; a device or store that does not
exist) and asserts that the verdicts and the store stay right: nothing false is recorded, the
store refuses to be resumed or reported once changed outside kcv, and bad input is refused or
recorded per row with a one-line reason.

The candidates here are written for these tests (tests/hostile style). Without a sandbox a
candidate can do all of this; the tests assert what kcv records when it does."""

import json
import os
import sqlite3
import subprocess
import time

import pytest

import kb_problems as kb
from audit_helpers import audit_command, child_env, run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

FAST = ["--device", "cpu", "--jobs", "1", "--no-progress", "--profiles", "strict",
        "--kernel-timeout", "300", "--load-timeout", "300"]
# The candidate attacks below (store triggers, signals to the orchestrator, a file that counts
# loads) are what the sandbox keeps out (test_attacks.py shows that); these tests run them
# without it, to assert the store's and the orchestrator's own defences: what kcv records when
# a candidate gets that far (a host without user namespaces, --no-sandbox).
UNSANDBOXED = [*FAST, "--no-sandbox"]

# The nearest ancestor of this process that is the audit's orchestrator (`kcv.audit` on its
# command line), and its --store: what a candidate reads from /proc without a sandbox.
FIND_ORCHESTRATOR = '''
import os

def _orchestrator():
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\\0")
        if b"kcv.audit" in argv:
            return pid, argv
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None, []
'''

WRONG = kb.ADD_CANDIDATE.replace("return x + self.alpha * y * scale",
                                 "return x - self.alpha * y * scale")

TRIGGER_CANDIDATE = FIND_ORCHESTRATOR + '''
import sqlite3

_pid, _argv = _orchestrator()
if _pid is not None:
    _store = _argv[_argv.index(b"--store") + 1].decode()
    _db = sqlite3.connect(_store, timeout=30)
    _db.executescript("""
        CREATE TRIGGER IF NOT EXISTS all_pass AFTER UPDATE ON kernels BEGIN
          UPDATE verdicts SET verdict='pass', finding='none' WHERE kernel_id=NEW.kernel_id;
          UPDATE kernels SET replica_verdict='accepted' WHERE kernel_id=NEW.kernel_id;
        END;""")
    _db.close()
''' + WRONG

KILLER_CANDIDATE = FIND_ORCHESTRATOR + '''
import signal

_pid, _argv = _orchestrator()
if _pid is not None:
    os.kill(_pid, signal.SIGKILL)
''' + kb.ADD_CANDIDATE


def row(rid, candidate, corpus="attacks", reference=kb.ADD):
    return {"id": rid, "corpus": corpus, "reference_code": reference, "candidate_code": candidate,
            "language": "torch"}


def write_corpus(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return str(path)


def cli():
    path = os.environ.get("KCV_TEST_CLI")
    if not path:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    return path


def report(store, *flags):
    return subprocess.run([cli(), "report", store, *flags], env=child_env(), capture_output=True,
                          text=True, timeout=300)


def integrity(store):
    return core.Store(store, read_only=True).verify()


def kernel(store, kid):
    return core.Store(store, read_only=True).kernel(kid)


def one_line_error(proc):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return lines[-1] if lines else ""


# ------------------------------------------------------------------------------------------
# A finished store, audited once and copied by each tamper test.

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    d = tmp_path_factory.mktemp("finished")
    corpus = write_corpus(d / "c.jsonl", [row("good", kb.ADD_CANDIDATE), row("wrong", WRONG)])
    store = str(d / "audit.db")
    done = run_audit(corpus, "--store", store, *FAST)
    assert done.returncode == 0, done.stderr[-4000:]
    s = core.Store(store, read_only=True)
    assert s.kernel("good")["status"] == "ok" and s.kernel("wrong")["status"] == "ok"
    assert any(v["verdict"] == "fail" for v in s.verdicts("wrong"))
    assert s.verify()["state"] == "verified"
    return corpus, store


def tampered_copy(finished, tmp_path, sql):
    corpus, store = finished
    copy = str(tmp_path / "copy.db")
    with sqlite3.connect(store) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)  # the same store id, so the same key
    db = sqlite3.connect(copy)
    db.executescript(sql)
    db.commit()
    db.close()
    return corpus, copy


def assert_refused_everywhere(corpus, store, expect):
    """Resume and report both refuse the store (exit 2, one line naming the problem)."""
    again = run_audit(corpus, "--store", store, *FAST)
    assert again.returncode == 2, again.stdout + again.stderr[-3000:]
    line = one_line_error(again)
    assert line.startswith("kcv audit: error: --store") and expect in line, line
    state = integrity(store)
    assert state["state"] == "failed" and any(expect in p for p in state["problems"]), state
    if os.environ.get("KCV_TEST_CLI"):
        r = report(store)
        assert r.returncode == 2 and "fails verification" in r.stderr and expect in r.stderr, r.stderr
        loud = report(store, "--untrusted")
        assert loud.returncode == 0 and loud.stdout.startswith("UNTRUSTED STORE"), loud.stdout[:500]


def test_a_rewritten_finished_verdict_is_refused(finished, tmp_path):
    corpus, store = tampered_copy(finished, tmp_path,
                                  "UPDATE verdicts SET verdict='pass', finding='none' "
                                  "WHERE kernel_id='wrong' AND verdict='fail';"
                                  "UPDATE kernels SET replica_verdict='accepted' "
                                  "WHERE kernel_id='wrong';")
    assert_refused_everywhere(corpus, store, "MAC mismatch")


def test_swapped_rows_are_refused(finished, tmp_path):
    corpus, store = tampered_copy(finished, tmp_path,
                                  "UPDATE verdicts SET kernel_id='x' WHERE kernel_id='good';"
                                  "UPDATE verdicts SET kernel_id='good' WHERE kernel_id='wrong';"
                                  "UPDATE verdicts SET kernel_id='wrong' WHERE kernel_id='x';")
    assert_refused_everywhere(corpus, store, "MAC mismatch")


def test_a_deleted_kernel_is_refused(finished, tmp_path):
    corpus, store = tampered_copy(finished, tmp_path,
                                  "PRAGMA foreign_keys=OFF;"
                                  "DELETE FROM verdicts WHERE kernel_id='wrong';"
                                  "DELETE FROM failing_probes WHERE kernel_id='wrong';"
                                  "DELETE FROM kernels WHERE kernel_id='wrong';")
    assert_refused_everywhere(corpus, store, "manifest")


@pytest.mark.parametrize("sql,name", [
    ("CREATE TRIGGER t AFTER INSERT ON verdicts BEGIN SELECT 1; END;", "trigger 't'"),
    ("CREATE VIEW v AS SELECT * FROM verdicts;", "view 'v'"),
])
def test_a_trigger_or_view_in_a_finished_store_is_refused(finished, tmp_path, sql, name):
    corpus, store = tampered_copy(finished, tmp_path, sql)
    assert_refused_everywhere(corpus, store, name)


def test_a_verified_store_reports_as_verified(finished):
    _, store = finished
    r = report(store, "--require-verified")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("integrity: verified (2 final kernel(s)"), r.stdout[:300]


def test_a_candidate_that_installs_a_trigger_stops_the_run_and_records_nothing_false(tmp_path):
    corpus = write_corpus(tmp_path / "c.jsonl", [row("trigger", TRIGGER_CANDIDATE)])
    store = str(tmp_path / "audit.db")
    done = run_audit(corpus, "--store", store, *UNSANDBOXED)
    assert done.returncode == 2, done.stdout + done.stderr[-4000:]
    line = one_line_error(done)
    assert "the store was changed during the run" in line and "trigger 'all_pass'" in line, line
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM kernels WHERE kernel_id='trigger'").fetchone()[0] \
        == "running"  # never recorded: no verdict, let alone a pass
    assert db.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 0
    db.close()
    state = integrity(store)
    assert state["state"] == "failed" and any("trigger 'all_pass'" in p for p in state["problems"])
    again = run_audit(corpus, "--store", store, *UNSANDBOXED)
    assert again.returncode == 2 and "trigger 'all_pass'" in one_line_error(again)


# ------------------------------------------------------------------------------------------
# Rows edited under the same id.

def test_an_edited_row_is_judged_again_or_kept_as_stale(finished, tmp_path):
    corpus, store = finished
    copy = str(tmp_path / "copy.db")
    with sqlite3.connect(store) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    before = kernel(copy, "good")
    edited = write_corpus(tmp_path / "c.jsonl", [row("good", kb.ADD_CANDIDATE + "\n# edited\n"),
                                                 row("wrong", WRONG)])
    kept = run_audit(edited, "--store", copy, "--stale", "keep", *FAST)
    assert kept.returncode == 0, kept.stderr[-3000:]
    k = kernel(copy, "good")
    assert k["stale"] and k["run_id"] == before["run_id"] and k["status"] == "ok"
    assert integrity(copy)["state"] == "verified"
    if os.environ.get("KCV_TEST_CLI"):
        r = report(copy, "--json", str(tmp_path / "r.json"))
        assert r.returncode == 0 and "1 stale kernel(s)" in r.stdout, r.stdout
        assert json.load(open(tmp_path / "r.json"))["headline"]["stale_kernels"] == 1

    again = run_audit(edited, "--store", copy, *FAST)  # --stale reaudit, the default
    assert again.returncode == 0, again.stderr[-3000:]
    k = kernel(copy, "good")
    assert not k["stale"] and k["run_id"] > before["run_id"] and k["status"] == "ok"
    assert k["row_hash"] != before["row_hash"]
    assert kernel(copy, "wrong")["run_id"] == before["run_id"]  # unchanged row: not redone
    assert integrity(copy)["state"] == "verified"


# ------------------------------------------------------------------------------------------
# Poison rows.

def test_a_kernel_that_kills_the_orchestrator_is_poison_after_the_cap(tmp_path):
    corpus = write_corpus(tmp_path / "c.jsonl", [row("a-killer", KILLER_CANDIDATE),
                                                 row("b-good", kb.ADD_CANDIDATE)])
    store = str(tmp_path / "audit.db")
    first = run_audit(corpus, "--store", store, *UNSANDBOXED)
    assert first.returncode == -9, first.stderr[-3000:]
    k = kernel(store, "a-killer")
    assert k["status"] == "running" and k["attempts"] == 1
    second = run_audit(corpus, "--store", store, *UNSANDBOXED)  # the suspect runs first, alone
    assert second.returncode == -9, second.stderr[-3000:]
    assert kernel(store, "a-killer")["attempts"] == 2
    assert kernel(store, "b-good")["status"] in ("pending", "running")
    third = run_audit(corpus, "--store", store, *UNSANDBOXED)
    assert third.returncode == 0, third.stderr[-3000:]
    assert "recorded as poison" in third.stderr
    k = kernel(store, "a-killer")
    assert k["status"] == "poison" and k["replica_verdict"] is None
    assert "died 2 time(s)" in k["message"]
    assert kernel(store, "b-good")["status"] == "ok"
    assert core.Store(store, read_only=True).verdicts("a-killer") == []
    assert integrity(store)["state"] == "verified"
    fourth = run_audit(corpus, "--store", store, *UNSANDBOXED)  # skipped on resume
    assert fourth.returncode == 0 and "left to do: 0" in fourth.stdout


STOPPER_CANDIDATE = FIND_ORCHESTRATOR + '''
import signal

_pid, _argv = _orchestrator()
if _pid is not None:
    os.kill(_pid, signal.SIGSTOP)
''' + kb.ADD_CANDIDATE


def test_a_kernel_that_stops_the_orchestrator_is_poison_once_the_stopped_run_is_killed(tmp_path):
    # A stopped orchestrator hangs until someone ends it; with SIGKILL (what `timeout
    # --kill-after` sends a stopped process) the attempt counts, and --max-attempts 1 makes the
    # next run record the kernel as poison.
    corpus = write_corpus(tmp_path / "c.jsonl", [row("stopper", STOPPER_CANDIDATE)])
    store = str(tmp_path / "audit.db")
    proc = subprocess.Popen(audit_command(corpus, "--store", store, *UNSANDBOXED),
                            env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, "the audit ended instead of being stopped"
            with open(f"/proc/{proc.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    break
            assert time.monotonic() < deadline, "the orchestrator was never stopped"
            time.sleep(0.2)
        proc.kill()
    finally:
        proc.wait(timeout=60)
    assert kernel(store, "stopper")["status"] == "running"
    again = run_audit(corpus, "--store", store, *UNSANDBOXED, "--max-attempts", "1")
    assert again.returncode == 0, again.stderr[-3000:]
    k = kernel(store, "stopper")
    assert k["status"] == "poison" and k["attempts"] == 1, k


def test_a_worker_killed_during_its_load_is_retried_once_then_recorded_as_such(tmp_path):
    loads = tmp_path / "loads.txt"
    candidate = (f"import os, signal\nopen({str(loads)!r}, 'a').write('load\\n')\n"
                 "os.kill(os.getpid(), signal.SIGKILL)\n" + kb.ADD_CANDIDATE)
    corpus = write_corpus(tmp_path / "c.jsonl", [row("killed", candidate)])
    store = str(tmp_path / "audit.db")
    done = run_audit(corpus, "--store", store, *UNSANDBOXED)
    assert done.returncode == 0, done.stderr[-3000:]
    k = kernel(store, "killed")
    assert k["status"] == "load_killed", k
    assert k["replica_verdict"] is None  # never ran: not a replica rejection
    assert "also when run alone" in k["message"] and "SIGKILL" in k["message"]
    assert loads.read_text().count("load") >= 2  # tried, then retried


# ------------------------------------------------------------------------------------------
# Input handled per row.

def test_a_row_that_is_not_utf8_is_malformed_and_the_audit_goes_on(tmp_path):
    good = json.dumps(row("ok-row", kb.ADD_CANDIDATE))
    bad = json.dumps(row("bad-row", "# caf\u00e9\n" + kb.ADD_CANDIDATE)).encode()
    bad = bad.replace("caf\\u00e9".encode(), b"caf\xff")
    path = tmp_path / "c.jsonl"
    path.write_bytes(good.encode() + b"\n" + bad + b"\n")
    store = str(tmp_path / "audit.db")
    done = run_audit(str(path), "--store", store, *FAST, "--time-limit", "0.001",
                     "--cold-workers")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    k = kernel(store, "bad-row")
    assert k["status"] == "malformed" and "not UTF-8: byte 0xff at column" in k["message"], k
    assert kernel(store, "ok-row")["status"] == "pending"  # the rest of the corpus is untouched
    if os.environ.get("KCV_TEST_CLI"):
        check = subprocess.run([cli(), "corpus-check", str(path)], capture_output=True,
                               text=True, timeout=60)
        assert check.returncode == 1 and "not UTF-8: byte 0xff at column" in check.stdout


def test_duplicate_ids_warn_and_the_extras_are_malformed(tmp_path):
    path = write_corpus(tmp_path / "file-name.jsonl", [
        row("dup", kb.ADD_CANDIDATE, corpus="real-corpus"),
        row("dup", WRONG, corpus="real-corpus"),
        {"id": "dup", "corpus": "real-corpus", "reference_code": kb.ADD},  # malformed too
        row("other", kb.ADD_CANDIDATE, corpus="real-corpus")])
    store = str(tmp_path / "audit.db")
    done = run_audit(path, "--store", store, *FAST, "--time-limit", "0.001", "--cold-workers")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("warning") == 2 and "duplicate id 'dup'" in done.stderr
    s = core.Store(store, read_only=True)
    assert s.kernel("dup")["status"] == "pending"  # the first row keeps the id
    extra = s.kernel("dup@file-name.jsonl:2")
    assert extra["status"] == "malformed" and "duplicate id" in extra["message"]
    assert extra["corpus"] == "real-corpus"
    third = s.kernel("dup@file-name.jsonl:3")
    assert third["status"] == "malformed" and "missing required field" in third["message"]
    # The summary counts by the rows' corpus field, not the file's name.
    assert "kernels by status (corpora real-corpus): malformed 2, pending 2" in done.stdout, \
        done.stdout
    if os.environ.get("KCV_TEST_CLI"):
        check = subprocess.run([cli(), "corpus-check", path], capture_output=True, text=True,
                               timeout=60)
        assert check.returncode == 1 and check.stdout.count("duplicate id") == 2, check.stdout


def test_a_device_that_does_not_exist_is_refused_before_the_run(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has CUDA")
    corpus = write_corpus(tmp_path / "c.jsonl", [row("a", kb.ADD_CANDIDATE)])
    store = tmp_path / "audit.db"
    done = run_audit(corpus, "--store", str(store), "--device", "cuda", "--no-progress")
    assert done.returncode == 2
    assert one_line_error(done).startswith("kcv audit: error: --device cuda:")
    assert not store.exists()  # nothing was run or recorded


@pytest.mark.parametrize("kind", ["missing_dir", "directory", "not_a_store"])
def test_a_store_that_cannot_be_opened_is_a_one_line_error(tmp_path, kind):
    corpus = write_corpus(tmp_path / "c.jsonl", [row("a", kb.ADD_CANDIDATE)])
    store = {"missing_dir": tmp_path / "no" / "such" / "a.db", "directory": tmp_path,
             "not_a_store": tmp_path / "c.jsonl"}[kind]
    done = run_audit(corpus, "--store", str(store), "--device", "cpu", "--no-progress")
    assert done.returncode == 2, done.stderr[-2000:]
    line = one_line_error(done)
    assert line.startswith(f"kcv audit: error: --store {str(store)!r}:"), line
    assert len([x for x in done.stderr.splitlines() if x.strip()]) == 1, done.stderr
