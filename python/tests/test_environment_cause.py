"""On a CPU audit a candidate that needs CUDA, in its import, its constructor or its first call,
is an environment finding, decided from the cause the worker reads off the exception object
(kcv/worker/errors.py cause_of: raised inside the code that starts CUDA, on a process that sees no
CUDA device), never from the words of a message: a candidate whose own error merely says "CUDA"
and "GPU" is the kernel's runtime error."""

import json
import sqlite3

import pytest

import kb_problems as kb
from audit_helpers import run_audit

pytest.importorskip("kcv._core")
torch = pytest.importorskip("torch")
if torch.cuda.is_available():
    pytest.skip("needs a machine where torch sees no CUDA device", allow_module_level=True)

ADD = kb.ADD_CANDIDATE
NEEDS_CUDA = ADD.replace("return x + self.alpha * y * scale",
                         "return (x.cuda() + self.alpha * y.cuda() * scale).cpu()")
INIT_CUDA = ADD.replace("        self.alpha = alpha",
                        '        self.alpha = alpha\n        self.w = torch.zeros(1, device="cuda")')
IMPORT_CUDA = ADD.replace("import torch.nn as nn\n",
                          "import torch.nn as nn\n\nON_GPU = torch.ones(1).cuda()\n")
SAYS_CUDA = ADD.replace("return x + self.alpha * y * scale",
                        'raise RuntimeError("CUDA error: an illegal memory access on the GPU "\n'
                        '                           "(NVIDIA driver)")')


def test_the_cause_not_the_message_makes_an_environment_finding(tmp_path):
    assert len({NEEDS_CUDA, INIT_CUDA, IMPORT_CUDA, SAYS_CUDA, ADD}) == 5
    corpus = tmp_path / "cause.jsonl"
    rows = [("needs_cuda", NEEDS_CUDA), ("init_cuda", INIT_CUDA), ("import_cuda", IMPORT_CUDA),
            ("says_cuda", SAYS_CUDA), ("plain", ADD)]
    corpus.write_text("".join(json.dumps({"id": i, "reference_code": kb.ADD, "candidate_code": c})
                              + "\n" for i, c in rows))
    store = tmp_path / "cause.db"
    done = run_audit(str(corpus), "--store", str(store), "--device", "cpu", "--jobs", "2",
                     "--profiles", "strict", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    got = dict(db.execute("SELECT kernel_id, status FROM kernels").fetchall())
    messages = dict(db.execute("SELECT kernel_id, message FROM kernels").fetchall())
    db.close()
    for kid in ("needs_cuda", "init_cuda", "import_cuda"):  # a call, ModelNew(), the import
        assert got[kid] == "environment", (kid, messages[kid])
    assert got["says_cuda"] == "runtime_error", messages["says_cuda"]
    assert "NVIDIA driver" in messages["says_cuda"]  # its words name CUDA, the GPU and NVIDIA
    assert got["plain"] == "ok", messages["plain"]
