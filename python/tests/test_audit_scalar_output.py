"""A loss, whose output is a 0-d tensor, goes through the whole audit on the CPU: the replica's
five trials, the battery and its judges. An audit on two NVIDIA H200 of one host (commit
3e3b690, 2026-11-30) lost three such kernels (cudal1/h100/L1/P94, P96, P100) to an `error` of
ours in the replica's in-place comparison; a unit test of that comparison guards the line, this
one the whole path."""

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from kcv.audit.kernel import KernelConfig, audit_kernel  # noqa: E402

# The reference's cross entropy again, as the candidate: a faithful kernel.
FAITHFUL = kb.XENT.replace("class Model(", "class ModelNew(")
# Off by a relative 1e-3: the replica (rtol 1e-2) accepts it, kcv's CMP gates reject it.
OFF = FAITHFUL.replace("return F.cross_entropy(logits, targets)",
                       "return F.cross_entropy(logits, targets) * 1.001")


def audit(kernel_id: str, candidate: str, tmp_path, servers) -> dict:
    """One kernel through audit_kernel, its reference workers forked from `servers`."""
    row = {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 95,
           "problem_name": "95_CrossEntropyLoss.py", "language": "pytorch",
           "reference_code": kb.XENT, "candidate_code": candidate}
    cfg = KernelConfig(profiles=["strict", "pytorch-eager"], device="cpu", call_timeout_s=120,
                       memory_limit_bytes=32 << 30, cache_dir=str(tmp_path), forkservers=servers)
    return audit_kernel(row, cfg)


def test_a_faithful_loss_is_audited_and_passes(tmp_path, warm_servers):
    out = audit("xent_faithful", FAITHFUL, tmp_path, warm_servers)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    failed = [v["gate"] for v in out["verdicts"] if v["verdict"] == "fail"]
    assert failed == [], failed


def test_a_loss_off_by_a_thousandth_passes_the_replica_and_fails_kcv(tmp_path, warm_servers):
    out = audit("xent_off", OFF, tmp_path, warm_servers)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    failed = {v["gate"] for v in out["verdicts"] if v["verdict"] == "fail"}
    assert "CMP-01" in failed, out["verdicts"]
