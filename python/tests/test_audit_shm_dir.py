"""Where the workers' per-call shared-memory files are made (kcv audit --shm-dir, docs/08 §6
"Call files"): the reference's and the candidate's workers make theirs in the directory given,
a sandboxed kernel its private one under it, --procs children get the same, and a directory
that does not exist is refused before anything runs."""

import json
import os
import sys
from pathlib import Path

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv import sandbox  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "examples/kernelbench/sample.jsonl"


def _row():
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    return next(r for r in rows if r["id"] == "sample/cpu/L1/P4")


def _verify(tmp_path, warm_servers, **dirs):
    return core.verify_module(_row(), worker_command=warm_servers.command("reference", None),
                              device="cpu", cache_dir=str(tmp_path / "cache"),
                              memory_limit_bytes=32 << 30, profiles=["strict"], shrink=False,
                              **dirs)


@pytest.mark.parametrize("role", ["reference", "candidate"])
def test_each_roles_call_files_are_made_in_its_directory(tmp_path, warm_servers, role):
    missing = str(tmp_path / f"no-{role}-dir")
    out = _verify(tmp_path, warm_servers, **{f"{role}_shm_dir": missing})
    # the harness's error, naming the directory: the calls were to be made there
    assert out["status"] == "error" and missing in out["message"], out["message"]
    made = tmp_path / f"{role}-shm"
    made.mkdir()
    out = _verify(tmp_path, warm_servers, **{f"{role}_shm_dir": str(made)})
    assert out["status"] == "ok", out["message"]
    assert list(made.iterdir()) == []  # every call file removed once its call ended


def test_a_kernels_sandbox_makes_its_private_directory_under_the_one_given(tmp_path):
    box = sandbox.KernelSandbox(str(tmp_path / "cache"), [], warm=False, shm_parent=str(tmp_path))
    try:
        assert os.path.dirname(box.shm_dir) == str(tmp_path)
        assert os.stat(box.shm_dir).st_mode & 0o777 == 0o700
    finally:
        box.close()
    assert not os.path.exists(box.shm_dir)


def test_the_children_of_procs_get_the_same_directory(tmp_path):
    from kcv.audit.orchestrator import AuditConfig
    from kcv.audit.parallel import ParallelAuditor

    opts = AuditConfig(corpora=[], store=str(tmp_path / "s.db"), shm_dir=str(tmp_path))
    cmd = ParallelAuditor(opts, 2).child_command(["x"], 1, 1.0, True, None)
    assert cmd[cmd.index("--shm-dir") + 1] == str(tmp_path)
    opts = AuditConfig(corpora=[], store=str(tmp_path / "s.db"))
    assert "--shm-dir" not in ParallelAuditor(opts, 2).child_command(["x"], 1, 1.0, True, None)


def test_the_cli_refuses_a_directory_that_does_not_exist(tmp_path):
    import subprocess

    missing = str(tmp_path / "nope")
    proc = subprocess.run([sys.executable, "-m", "kcv.audit", str(SAMPLE), "--store",
                           str(tmp_path / "a.db"), "--device", "cpu", "--shm-dir", missing],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--shm-dir {missing!r}: no such directory; nothing was run" in proc.stderr
    assert not (tmp_path / "a.db").exists()
