"""What a kernel's sandbox binds read-only (kcv.sandbox.python_paths, docs/10_threat_model.md):
never the working directory that `python -m` puts on sys.path, never /tmp or a path that holds
it, never a path that holds the audit's store or key directory. The last test runs a real audit
from the store's own directory with a candidate that is right only when it can read the store,
so it passes if the store leaks into the sandbox."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest

import kb_problems as kb
from audit_helpers import audit_command, child_env
from kcv import sandbox


@pytest.fixture
def clean_hide(monkeypatch):
    monkeypatch.delenv(sandbox.HIDE_ENV, raising=False)


def test_the_working_directory_on_sys_path_is_not_bound(tmp_path, monkeypatch, clean_hide):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert str(tmp_path) not in sandbox.python_paths()


def test_tmp_and_what_holds_it_are_never_bound(monkeypatch, clean_hide):
    monkeypatch.setattr(sys, "path", ["/tmp", "/", *sys.path])
    paths = sandbox.python_paths()
    assert "/tmp" not in paths and "/" not in paths


def test_a_path_holding_a_hidden_directory_is_not_bound(tmp_path, monkeypatch, clean_hide):
    lib = tmp_path / "lib"
    (lib / "stores").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(lib)])
    assert str(lib) in sandbox.python_paths()
    sandbox.hide([str(lib / "stores")])
    assert str(lib) not in sandbox.python_paths()
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))
    assert sandbox.library_paths() == []


# Right (x + alpha * y * scale, alpha from the reference) only when the store is readable.
PEEK = '''
import os
import torch.nn as nn

STORE = "@STORE@"


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        try:
            with open(STORE, "rb") as f:
                f.read(16)
            return x + self.alpha * y * scale
        except OSError:
            return x + y
'''


def test_a_candidate_audited_from_the_stores_directory_cannot_read_the_store(tmp_path):
    core = pytest.importorskip("kcv._core")
    pytest.importorskip("torch")
    if not core.sandbox_support()["available"]:
        pytest.skip("no sandbox on this host (bwrap missing or no user namespaces)")
    store = tmp_path / "audit.db"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "peek", "reference_code": kb.ADD,
                                  "candidate_code": PEEK.replace("@STORE@", str(store))}) + "\n")
    env = child_env()
    env.pop(sandbox.HIDE_ENV, None)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])  # the store's dir
    done = subprocess.run(audit_command(str(corpus), "--store", str(store), "--device", "cpu",
                                        "--jobs", "1", "--profiles", "strict", "--no-progress"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        verdict = db.execute("SELECT verdict FROM verdicts WHERE kernel_id='peek' AND "
                             "gate='CMP-01'").fetchone()
    assert verdict == ("fail",), "the candidate read the store from its sandbox"
