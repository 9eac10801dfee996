"""The attack suite (docs/10_threat_model.md): hostile candidates (hostile/*.py, each says what it
tries) through the real audit on the CPU, asserting that the verdicts and the store stay right
with the sandbox on, and, with the sandbox off, that the same attacks get through (so these
tests can fail).

One sandboxed audit runs every attack beside an honest control; the unsandboxed runs are two,
since one of their attacks kills the audit it runs in. Each hostile candidate computes x + y
where the problem is x + 3 * y * scale (kb_problems.ADD), so every honest verdict of it is a
CMP-01 failure; sibling_probe returns the right answer only when its attack reached a process
outside its worker.
"""

import json
import os
import signal
import sqlite3
import uuid

import pytest

import kb_problems as kb
from audit_helpers import run_audit

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = ["--device", "cpu", "--jobs", "1", "--profiles", "strict", "--no-progress",
        "--call-timeout", "20", "--kernel-timeout", "300"]
PROBES = ("ptrace", "proc_mem", "proc_parent", "fd_reuse")


def hostile(name: str, **fill) -> str:
    with open(os.path.join(HERE, "hostile", name + ".py"), encoding="utf-8") as f:
        text = f.read()
    for key, value in fill.items():
        text = text.replace(f"@{key}@", value)
    return text


def rows(store: str, token: str, ids: list[str]) -> list[dict]:
    codes = {
        "control": kb.ADD_CANDIDATE,
        "store_tamper": hostile("store_tamper", STORE=store, KERNEL="store_tamper"),
        "orphan": hostile("orphan", TOKEN=token),
        "kill_reference": hostile("signal_reference", SIGNAL="SIGKILL"),
        "stop_reference": hostile("signal_reference", SIGNAL="SIGSTOP"),
        "kill_orchestrator": hostile("kill_orchestrator"),
        "exit_between_calls": hostile("exit_between_calls"),
        **{f"probe_{m}": hostile("sibling_probe", MODE=m) for m in PROBES},
    }
    return [{"id": i, "reference_code": kb.ADD, "candidate_code": codes[i]} for i in ids]


def audit(tmp_path, name: str, ids: list[str], *extra):
    store = str(tmp_path / f"{name}.db")
    token = uuid.uuid4().hex
    corpus = tmp_path / f"{name}.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows(store, token, ids)))
    proc = run_audit(str(corpus), "--store", store, *ARGS, *extra, timeout=1200)
    return proc, store, token


def kernels(store: str) -> dict:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        out = {k: {"status": s, "replica": r, "message": m, "verdicts": {}}
               for k, s, r, m in db.execute(
                   "SELECT kernel_id, status, replica_verdict, message FROM kernels")}
        for k, gate, verdict, reason, evidence in db.execute(
                "SELECT kernel_id, gate, verdict, reason, evidence FROM verdicts"):
            out[k]["verdicts"][gate] = (verdict, reason, json.loads(evidence))
    return out


def triggers(store: str) -> list:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()


def survivors(token: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(pid))
        except (OSError, ValueError):
            continue
    return found


def sandbox_available() -> bool:
    from kcv import _core

    return bool(_core.sandbox_support()["available"])


# --- with the sandbox -------------------------------------------------------------------------

SANDBOXED = ["control", "store_tamper", "orphan", "kill_reference", "stop_reference",
             "kill_orchestrator", "exit_between_calls", *(f"probe_{m}" for m in PROBES)]


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    if not sandbox_available():
        pytest.skip("no sandbox on this host (bwrap missing or no user namespaces)")
    tmp = tmp_path_factory.mktemp("attacks-sandboxed")
    proc, store, token = audit(tmp, "sandboxed", SANDBOXED)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return kernels(store), store, token, proc


def test_the_sandboxed_audit_finishes_every_kernel(sandboxed):
    ks, _, _, proc = sandboxed
    assert sorted(ks) == sorted(SANDBOXED)
    assert "sandbox: bwrap" in proc.stdout
    for k in ks.values():
        assert all("unsandboxed" not in ev for _, _, ev in k["verdicts"].values())


def test_the_honest_control_passes_in_the_sandbox(sandboxed):
    control = sandboxed[0]["control"]
    assert control["status"] == "ok" and control["replica"] == "accepted", control
    assert {v for v, _, _ in control["verdicts"].values()} <= {"pass", "not_applicable"}


@pytest.mark.parametrize("kernel", [k for k in SANDBOXED
                                    if k not in ("control", "exit_between_calls")])
def test_an_attack_from_the_sandbox_leaves_the_verdict_to_the_candidates_values(sandboxed,
                                                                                 kernel):
    k = sandboxed[0][kernel]
    # its wrong values fail CMP-01; a candidate that kills its own parent (inside its sandbox)
    # crashes its own worker at the reference shape: either way the failure is the candidate's
    assert k["replica"] == "rejected" and k["status"] in ("ok", "crash"), k
    assert k["status"] == "crash" or k["verdicts"]["CMP-01"][0] == "fail", k
    assert not [g for g, (v, _, _) in k["verdicts"].items() if v == "error"], k


def test_no_trigger_reaches_the_store_from_the_sandbox(sandboxed):
    assert triggers(sandboxed[1]) == []


def test_nothing_a_sandboxed_candidate_started_outlives_its_kernel(sandboxed):
    assert survivors(sandboxed[2]) == []


def test_a_worker_that_dies_between_calls_is_a_recorded_crash(sandboxed):
    k = sandboxed[0]["exit_between_calls"]
    said = k["message"] + json.dumps(k["verdicts"])
    failed = [g for g, (v, _, _) in k["verdicts"].items() if v == "fail"]
    assert k["status"] == "crash" or failed, k
    # noticed before the next call was sent ("ended between calls") or while it was being sent
    assert "ended between calls" in said or "exited with exit code 0" in said, k


# --- without the sandbox: the same attacks get through ----------------------------------------

UNSANDBOXED = ["orphan", "kill_reference", "stop_reference",
               *(f"probe_{m}" for m in PROBES if m != "fd_reuse")]


@pytest.fixture(scope="module")
def unsandboxed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks-unsandboxed")
    proc, store, token = audit(tmp, "unsandboxed", UNSANDBOXED, "--no-sandbox")
    left = survivors(token)
    for pid in left:  # the orphan's grandchild: ours to end
        os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return kernels(store), store, left, proc


def test_without_the_sandbox_every_verdict_says_so(unsandboxed):
    ks, _, _, proc = unsandboxed
    assert "UNSANDBOXED" in proc.stderr and "sandbox: off" in proc.stdout
    for k in ks.values():
        assert k["message"].startswith("unsandboxed"), k["message"]
        assert all(ev.get("unsandboxed") for _, _, ev in k["verdicts"].values()), k


def test_without_the_sandbox_a_candidate_reaches_the_store_and_the_store_stops_the_run(tmp_path):
    # The trigger is installed (the sandbox is what kept it out); the store's schema check
    # (docs/07_audit_store.md, "Integrity") finds it before the kernel's verdicts are committed,
    # and the run stops with nothing recorded for the kernel.
    proc, store, _ = audit(tmp_path, "tamper", ["store_tamper"], "--no-sandbox")
    assert triggers(store) != []
    assert proc.returncode == 2 and "the store was changed during the run" in proc.stderr, \
        proc.stdout + proc.stderr[-3000:]
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 0


def test_without_the_sandbox_a_candidates_process_outlives_the_audit(unsandboxed):
    assert unsandboxed[2] != []


@pytest.mark.parametrize("mode", [m for m in PROBES if m != "fd_reuse"])
def test_without_the_sandbox_a_candidate_reaches_its_siblings(unsandboxed, mode):
    assert unsandboxed[0][f"probe_{mode}"]["verdicts"]["CMP-01"][0] == "pass"


@pytest.mark.parametrize("kernel", ["kill_reference", "stop_reference"])
def test_without_the_sandbox_a_struck_reference_is_blamed_on_the_candidate(unsandboxed, kernel):
    k = unsandboxed[0][kernel]
    assert k["status"] == "crash" and k["replica"] == "rejected", k
    assert "trusted reference worker died of a signal or was stopped" in k["message"]


def test_without_the_sandbox_a_candidate_kills_the_audit(tmp_path):
    proc, _, _ = audit(tmp_path, "killed", ["kill_orchestrator"], "--no-sandbox")
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
