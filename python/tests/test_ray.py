"""kcv on Ray (kcv/ray.py), on a local Ray instance of 2 CPUs started once for this module.

- `kcv audit --ray` judges three sample rows exactly as the local audit does (status, replica
  verdict and every gate verdict), and resumes like it: a driver killed with SIGKILL after its
  first kernel leaves the running kernel a suspect, which the next run on Ray finishes; a third
  run finds nothing left and changes nothing.
- `kcv.ray.Verifier` (the actor of training loops) returns a row's record and its reward.
- Without an importable ray package, `--ray` is one line on stderr and exit 2 (this one runs
  whether or not Ray is installed)."""

import os
import signal
import sqlite3
import subprocess
import time

import pytest

from audit_helpers import SAMPLE, audit_command, child_env, run_audit
import kb_problems

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")
try:
    import ray
except ImportError:
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason="the ray package is not installed")

# A correct kernel, one that fails CMP-02 (and more), one that does not import, a malformed row
# (examples/kernelbench/README.md); one profile keeps it short.
IDS = ["sample/cpu/L1/P1", "sample/cpu/L1/P3", "sample/cpu/L1/P7", "sample/cpu/L1/P8"]
COMMON = ["--device", "cpu", "--profiles", "strict", "--no-progress", "--ids", *IDS]


def snapshot(path):
    """kernel id -> (status, replica verdict, sorted (gate, profile, verdict, reason))."""
    store = core.Store(path)
    return {k["kernel_id"]: (k["status"], k["replica_verdict"],
                             sorted((v["gate"], v["profile"], v["verdict"], v["reason"])
                                    for v in store.verdicts(k["kernel_id"])))
            for k in store.kernels()}


def finished(path):
    if not os.path.exists(path):
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM kernels WHERE status NOT IN "
                              "('pending','running','malformed')").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.fixture(scope="module")
def cluster():
    """The address of a local Ray instance (2 CPUs, no dashboard) for this module."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def test_without_ray_the_flag_is_one_line_and_exit_2(tmp_path):
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray in this environment')\n")
    env = child_env()
    env["PYTHONPATH"] = str(tmp_path / "no-ray") + os.pathsep + env["PYTHONPATH"]
    store = tmp_path / "s.db"
    out = subprocess.run(audit_command(SAMPLE, "--store", str(store), "--ray", "auto", *COMMON),
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kcv audit: error: --ray: the ray package"), lines
    assert not store.exists()


@needs_ray
def test_ray_judges_as_the_local_audit_and_resumes_like_it(tmp_path, cluster):
    local, on_ray = str(tmp_path / "local.db"), str(tmp_path / "ray.db")
    done = run_audit(SAMPLE, "--store", local, "--jobs", "2", *COMMON)
    assert done.returncode == 0, done.stderr[-4000:]

    # One kernel at a time on Ray, killed (SIGKILL) once the first is recorded.
    proc = subprocess.Popen(audit_command(SAMPLE, "--store", on_ray, "--ray", cluster,
                                          "--jobs", "1", *COMMON),
                            env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    try:
        while finished(on_ray) < 1:
            assert proc.poll() is None, "the Ray audit ended before a kernel was recorded"
            assert time.monotonic() < deadline, "no kernel recorded in time"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    left = [k["kernel_id"] for k in core.Store(on_ray).kernels()
            if k["status"] in ("pending", "running")]
    assert left, "the kill came after the last kernel"

    again = run_audit(SAMPLE, "--store", on_ray, "--ray", cluster, *COMMON)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "left to do: 0" in again.stdout
    assert snapshot(on_ray) == snapshot(local)
    assert snapshot(local)["sample/cpu/L1/P1"][0] == "ok"
    assert any(v[0] == "CMP-02" and v[2] == "fail" for v in snapshot(local)["sample/cpu/L1/P3"][2])

    store = core.Store(on_ray)
    before = {k["kernel_id"]: (k["run_id"], k["attempts"]) for k in store.kernels()}
    del store
    third = run_audit(SAMPLE, "--store", on_ray, "--ray", cluster, *COMMON)
    assert third.returncode == 0, third.stderr[-4000:]
    assert "left to do: 0" in third.stdout
    store = core.Store(on_ray)
    assert {k["kernel_id"]: (k["run_id"], k["attempts"]) for k in store.kernels()} == before
    assert store.integrity_check() == "ok"


@needs_ray
def test_the_verifier_actor_returns_the_record_and_a_reward(cluster):
    from kcv.ray import Verifier

    verifier = Verifier.options(num_cpus=1).remote(device="cpu")
    try:
        good = ray.get(verifier.verify.remote({
            "id": "add", "reference_code": kb_problems.ADD,
            "candidate_code": kb_problems.ADD_CANDIDATE}), timeout=600)
        broken = ray.get(verifier.verify.remote({
            "id": "broken", "reference_code": kb_problems.ADD,
            "candidate_code": "this is not python", "contract": {"profile": "pytorch_eager"}}),
            timeout=600)
        typo = ray.get(verifier.verify.remote({
            "id": "typo", "reference_code": kb_problems.ADD,
            "candidate_code": kb_problems.ADD_CANDIDATE, "contract": {"profil": "strict"}}),
            timeout=600)
    finally:
        ray.kill(verifier)
    assert good["status"] == "ok" and good["profile"] == "strict", good["message"]
    assert good["reward"] == 1.0 and good["decided"]
    assert good["gates"] and set(good["gates"].values()) <= {"pass", "not_applicable"}
    assert {v["profile"] for v in good["verdicts"]} == {"strict"}
    assert broken["status"] == "import_error" and broken["profile"] == "pytorch-eager"
    assert broken["reward"] == 0.0 and broken["decided"] and broken["gates"] == {}
    assert typo["status"] == "malformed" and "profil" in typo["message"]
    assert typo["reward"] == 0.0 and not typo["decided"]


@needs_ray
def test_an_actor_that_dies_mid_kernel_leaves_it_running_and_the_run_goes_on(tmp_path, cluster):
    """A reference that kills its parent (a cold worker's parent is the actor) kills the actor
    while the kernel runs: the kernel stays running, as under a dead orchestrator, the other
    kernel is judged on a fresh actor, and the next run records the suspect as poison
    (--max-attempts 1) without running it."""
    import json

    killer = ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + kb_problems.ADD)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "killer", "reference_code": killer, "candidate_code": kb_problems.ADD_CANDIDATE},
        {"id": "fine", "reference_code": kb_problems.ADD,
         "candidate_code": kb_problems.ADD_CANDIDATE})))
    path = str(tmp_path / "s.db")
    args = [str(corpus), "--store", path, "--ray", cluster, "--jobs", "1", "--cold-workers",
            "--device", "cpu", "--profiles", "strict", "--no-progress"]
    first = run_audit(*args)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "killer: its Ray actor died while it ran" in first.stderr
    assert "left to do: 1" in first.stdout
    kernels = {k["kernel_id"]: k for k in core.Store(path).kernels()}
    assert kernels["killer"]["status"] == "running" and kernels["killer"]["attempts"] == 1
    assert kernels["fine"]["status"] == "ok"

    second = run_audit(*args, "--max-attempts", "1")
    assert second.returncode == 0, second.stderr[-4000:]
    assert "left to do: 0" in second.stdout
    assert {k["kernel_id"]: k["status"] for k in core.Store(path).kernels()} == {
        "killer": "poison", "fine": "ok"}
