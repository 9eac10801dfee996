"""The build cache across audit runs: a candidate that builds a library through torch's JIT path
(torch.utils.cpp_extension.load on a C++ file without torch headers, a second or two of
compiling) is audited twice with one --cache-dir and two stores. The second run finds the first
run's build in place and ninja links nothing. In its sandbox (where there is one) the candidate
builds into its kernel's scratch; kcv publishes that entry under the hash of the candidate's
code when the kernel ends and copies it into the next run's scratch; without a sandbox both
runs use the shared entry itself. The candidate says what it found in the message of the
runtime_error its forward raises (it may write nowhere outside its sandbox)."""

import json
import os
import sqlite3
import subprocess

import pytest

import kb_problems as kb
from audit_helpers import audit_command, child_env

CANDIDATE = '''
import os
import torch.nn as nn
import torch.utils.cpp_extension as cpp

_root = os.environ["TORCH_EXTENSIONS_DIR"]
_found = os.path.exists(os.path.join(_root, "kcv_tiny", "kcv_tiny.so"))
_src = os.path.join(_root, "tiny.cpp")
if not os.path.exists(_src):
    os.makedirs(_root, exist_ok=True)
    with open(_src, "w") as f:
        f.write('extern "C" int kcv_tiny_answer() { return 42; }\\n')
cpp.load(name="kcv_tiny", sources=[_src], is_python_module=False)
with open(os.path.join(_root, "kcv_tiny", ".ninja_log")) as f:
    _links = sum(1 for line in f if line.split("\\t")[3:4] == ["kcv_tiny.so"])


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()

    def forward(self, x, y, scale):
        raise RuntimeError(f"kcv-cache found={_found} links={_links}")
'''


def audit(tmp_path, name, cache, sandboxed):
    store = tmp_path / f"{name}.db"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "tiny", "reference_code": kb.ADD,
                                  "candidate_code": CANDIDATE}) + "\n")
    args = [str(corpus), "--store", str(store), "--device", "cpu", "--jobs", "1",
            "--profiles", "strict", "--no-progress", "--cache-dir", str(cache)]
    done = subprocess.run(audit_command(*args, *([] if sandboxed else ["--no-sandbox"])),
                          env=child_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr[-3000:]
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        status, message = db.execute(
            "SELECT status, message FROM kernels WHERE kernel_id='tiny'").fetchone()
    assert status == "runtime_error", (status, message, done.stderr[-3000:])
    return message


def test_a_second_run_with_the_same_cache_dir_builds_nothing(tmp_path):
    core = pytest.importorskip("kcv._core")
    pytest.importorskip("torch")
    sandboxed = core.sandbox_support()["available"]
    cache = tmp_path / "cache"
    first = audit(tmp_path, "first", cache, sandboxed)
    assert "kcv-cache found=False links=1" in first, first
    if sandboxed:  # published from the scratch, never built in the shared entries
        assert list(cache.glob("candidates/*/*/torch_extensions/kcv_tiny/kcv_tiny.so"))
        assert not list(cache.glob("builds/*/torch_extensions/kcv_tiny"))
    second = audit(tmp_path, "second", cache, sandboxed)
    assert "kcv-cache found=True links=1" in second, second
