"""A shape whose forward meta cannot size is refused when the reference's models alone exceed
the probe budget (load field refuse_models_over, docs/06 §7): the probe does not count, its
reason says so, and nothing of the models is built for real. The problem: a convolution whose
kernel size sets the length of the sum after it, so ORD-01 and PRC-02 set the kernel size to
1024 and more, where the forward raises (a kernel larger than its input) on meta as for real.
Before the rule, the reference built models of 0.6 to 620 GB at those shapes: gigabytes drawn
and dropped, and past the worker's memory limit an out-of-memory error that sent the kernel to
run again alone."""

import json

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

REFERENCE = '''
import torch
import torch.nn as nn

C = 4
K = 3


class Model(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.conv = nn.Conv2d(3, c, k)

    def forward(self, x):
        y = self.conv(x)
        return y / (1.0 + y.flatten(2).abs().sum(-1)[..., None, None])


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return [C, K]
'''


def test_shapes_whose_models_exceed_the_budget_are_refused_without_building_them(
        tmp_path, warm_servers):
    row = {"id": "budget/conv", "corpus": "budget", "level": 2, "problem_id": 1,
           "problem_name": "conv_norm", "language": "torch", "reference_code": REFERENCE,
           "candidate_code": REFERENCE.replace("class Model(", "class ModelNew(")}
    out = core.verify_module(row, worker_command=warm_servers.command("reference", None),
                             device="cpu", cache_dir=str(tmp_path), memory_limit_bytes=32 << 30,
                             profiles=["strict"], shrink=False)
    # K = 65536 would hold 618 GB: past the worker's 32 GiB limit the real build ran out of
    # memory, which marked the kernel out_of_memory (run again alone)
    assert (out["status"], out["out_of_memory"]) == ("ok", False), out["message"]
    verdicts = {v["gate"]: v for v in out["verdicts"]}
    prc02 = verdicts["PRC-02"]  # K in {256, 2048, 8192}: every probe refused
    assert prc02["verdict"] == "not_applicable", prc02
    assert "the reference's models hold 9216.0 MiB of parameters and buffers" in prc02["reason"]
    assert "over the budget of 256 MiB" in prc02["reason"]
    ord01 = json.loads(verdicts["ORD-01"]["evidence_json"])
    # K in {1024, 4096, 16384, 65536} under both distributions: refused by the budget or, at 1024
    # (151 MB of models), by the reference's own forward
    assert ord01["probes_refused"] >= 8 and ord01["probes"] >= 2, ord01
