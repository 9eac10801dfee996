"""The pooled scale is drawn once per trusted key (src/kernelbench/model_oracle.cpp): a kernel
whose outputs are all exact zeros has no informative element at any probe, so every probe that
reads a bound pools the scale of extra seeds; the later gates' probes of the reference input have
the first probe's trusted key and read its pooled scale instead of drawing and running the pool
again (`oracle.pools_reused`), and the kernel still passes."""

import json
import sqlite3

import pytest

from audit_helpers import run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

ZEROS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(-|x|): every output is an exact zero."""

    def forward(self, x):
        return torch.relu(-torch.abs(x))


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''


def test_a_later_probe_of_the_same_key_reads_the_pooled_scale(tmp_path):
    corpus = tmp_path / "zeros.jsonl"
    corpus.write_text(json.dumps({"id": "zeros", "reference_code": ZEROS,
                                  "candidate_code": ZEROS.replace("class Model(",
                                                                  "class ModelNew(")}) + "\n")
    store, timings = tmp_path / "zeros.db", tmp_path / "zeros_timings.jsonl"
    done = run_audit(str(corpus), "--store", str(store), "--device", "cpu", "--jobs", "1",
                     "--profiles", "strict", "--no-progress", "--timings", str(timings))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    (row,) = [json.loads(line) for line in timings.read_text().splitlines()]
    assert row["kernel_id"] == "zeros", row
    assert row["oracle.pools_reused"] >= 1, row
    with sqlite3.connect(store) as db:
        verdicts = db.execute("select gate, profile, verdict, reason from verdicts "
                              "where kernel_id = 'zeros'").fetchall()
    assert verdicts and all(v[2] in ("pass", "not_applicable") for v in verdicts), verdicts
