"""A few rows of the real corpora that run on the CPU, end to end: PyTorch-level (`language ==
"torch"`) level-1 rows of cuda_l1.jsonl with small elementwise or normalization problems are
audited with --device cpu, and each must end with a final status (whatever it is: the point is
that real, third-party candidates go through the whole path without stopping the audit). The
corpus is read at test time (third-party data, never copied here); skipped when it is absent."""

import json
import os
import re

import pytest

from audit_helpers import CORPORA, run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

CUDA_L1 = os.path.join(CORPORA, "cuda_l1.jsonl")
SMALL = re.compile(r"ReLU|Sigmoid|Tanh|L2Norm")
ROWS = 3
FINAL = ("ok", "crash", "timeout", "compile_error", "import_error", "error", "runtime_error",
         "bad_output", "reference_error", "environment")


def pick_rows():
    out = []
    with open(CUDA_L1, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["language"] == "torch" and r["level"] == 1 and SMALL.search(r["problem_name"]):
                out.append(r["id"])
            if len(out) == ROWS:
                break
    return out


@pytest.mark.skipif(not os.path.exists(CUDA_L1), reason=f"{CUDA_L1} is absent")
def test_cpu_runnable_corpus_rows_reach_a_final_status(tmp_path):
    ids = pick_rows()
    assert ids
    path = str(tmp_path / "corpus.db")
    proc = run_audit(CUDA_L1, "--store", path, "--device", "cpu", "--jobs", "2", "--no-progress",
                     "--kernel-timeout", "300", "--ids", *ids)
    assert proc.returncode == 0, proc.stderr[-4000:]
    store = core.Store(path)
    assert store.todo() == []
    for kid in ids:
        k = store.kernel(kid)
        assert k is not None and k["status"] in FINAL, (kid, k)
        if k["status"] == "ok":
            assert k["replica_verdict"] in ("accepted", "rejected")
            assert k["op_class"] and json.loads(k["facts"])["trial_seeds"]
            vs = store.verdicts(kid)
            # every gate under each of the five profiles (the CLI's default), with a finding
            # wherever one fails
            assert len(vs) == 60 and {v["gate"] for v in vs} >= {"CMP-01", "RES-01"}
            assert all(v["finding"] != "none" for v in vs if v["verdict"] == "fail"), vs
