"""Kernel statuses come before gates (docs/08_audit.md §2): a candidate that raises, or returns
the wrong shape, at the reference shape gets a kernel status and no gate verdicts (one defect,
not twelve failures); one that is right at the reference shape and raises at another shape gets
a CMP-01 failure with the finding call_failed; a reference that does not load is a
reference_error, never the candidate's. Through kcv._core.verify_module on the CPU."""

from __future__ import annotations

import pytest

_core = pytest.importorskip("kcv._core")

REFERENCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

batch_size = 8
dim = 64

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
'''

CANDIDATES = {
    "raises": "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
              "        raise RuntimeError('not implemented')\n",
    "wrong_shape": "import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                   "        return (torch.relu(x) * 2.0)[:, :-1]\n",
    "specialised": "import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                   "        return (torch.relu(x) * 2.0).reshape(8, 64)\n",
}


def verify(servers, candidate: str, reference: str = REFERENCE) -> dict:
    row = {"id": "statuses", "reference_code": reference, "candidate_code": candidate}
    return _core.verify_module(row, worker_command=servers.command("candidate", None),
                               reference_worker_command=servers.command("reference", None),
                               device="cpu", profiles=["strict"], shrink=False)


def test_a_candidate_that_raises_at_the_reference_shape_has_a_status_and_no_verdicts(warm_servers):
    out = verify(warm_servers, CANDIDATES["raises"])
    assert out["status"] == "runtime_error"
    assert out["verdicts"] == []
    assert out["replica_verdict"] == "rejected"
    assert "not implemented" in out["message"]


def test_wrong_outputs_at_the_reference_shape_are_bad_output(warm_servers):
    out = verify(warm_servers, CANDIDATES["wrong_shape"])
    assert out["status"] == "bad_output"
    assert out["verdicts"] == []


def test_a_shape_specialised_candidate_fails_cmp01_with_call_failed(warm_servers):
    out = verify(warm_servers, CANDIDATES["specialised"])
    assert out["status"] == "ok"
    assert out["replica_verdict"] == "accepted"
    cmp01 = next(v for v in out["verdicts"] if v["gate"] == "CMP-01")
    assert (cmp01["verdict"], cmp01["finding"], cmp01["scope"]) == ("fail", "call_failed", "shape")


def test_a_reference_that_does_not_load_is_the_harness_not_the_candidate(warm_servers):
    out = verify(warm_servers, CANDIDATES["raises"],
                 reference="import torch\nraise SystemExit(3)\n")
    assert out["status"] == "reference_error"
    assert out["verdicts"] == []
