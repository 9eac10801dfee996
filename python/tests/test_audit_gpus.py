"""Spreading kernels over GPUs and sizing workers' thread pools (kcv.audit.gpus, session.py):
the pool hands out the least-loaded GPU, CUDA_VISIBLE_DEVICES decides which ids exist, and a
worker started for a GPU and a thread count really sees them (a reference model that returns
what its process sees, run on the CPU)."""

import threading
import time

import numpy as np
import pytest

from kcv.audit.gpus import GpuPool, visible_gpus
from kcv.audit.session import worker_command


def test_the_pool_hands_out_the_gpu_with_fewest_kernels_and_takes_it_back():
    pool = GpuPool(["0", "1"])
    with pool.take() as a, pool.take() as b:
        assert {a, b} == {"0", "1"}
        with pool.take() as c:
            assert c == "0"  # a tie goes to the first
            assert pool.in_flight == [2, 1]
        with pool.take() as d:
            assert d == "0"
    assert pool.in_flight == [0, 0]
    with pytest.raises(RuntimeError):
        with pool.take():
            raise RuntimeError("a kernel's failure")
    assert pool.in_flight == [0, 0]  # released anyway


def test_the_pool_balances_under_threads():
    pool = GpuPool(["a", "b", "c"])
    seen, lock = [], threading.Lock()
    gate = threading.Barrier(6)

    def kernel():
        with pool.take() as g:
            with lock:
                seen.append(g)
            gate.wait(timeout=10)  # all six hold a GPU at once

    threads = [threading.Thread(target=kernel) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == ["a", "a", "b", "b", "c", "c"]


def test_a_pool_needs_a_gpu():
    with pytest.raises(ValueError):
        GpuPool([])


def test_visible_gpus_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5,7")
    assert visible_gpus() == ["3", "5", "7"]
    assert visible_gpus(2) == ["3", "5"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert visible_gpus(device_count=lambda: 2) == ["0", "1"]
    assert visible_gpus(8, device_count=lambda: 2) == ["0", "1"]  # never more than exist
    assert visible_gpus(device_count=lambda: 0) == []

    def no_driver():
        raise RuntimeError("no driver")
    assert visible_gpus(device_count=no_driver) == []


def test_worker_command_names_gpu_and_threads_only_when_asked():
    plain = worker_command()
    assert plain[1:] == ["-m", "kcv.worker"]
    assert worker_command("1", 4) == plain + ["--gpu", "1", "--threads", "4"]
    assert worker_command(threads=2) == plain + ["--threads", "2"]


def test_the_worker_refuses_an_unknown_argument():
    import subprocess
    import sys

    from audit_helpers import child_env

    proc = subprocess.run([sys.executable, "-m", "kcv.worker", "--gpus", "1"], env=child_env(),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "unknown argument '--gpus'" in proc.stderr


SEES = """
import os
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        gpu = float(os.environ.get("CUDA_VISIBLE_DEVICES", "-1"))
        return x.sum() * 0 + torch.tensor([float(torch.get_num_threads()), gpu], dtype=x.dtype)
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
"""


def test_a_session_worker_sees_its_gpu_and_thread_count(tmp_path):
    pytest.importorskip("kcv._core")
    pytest.importorskip("torch")
    from kcv.audit.session import Limits, ProblemSession

    row = {"id": "sees", "corpus": "test", "level": 1, "problem_id": 1, "problem_name": "1_sees",
           "language": "pytorch", "reference_code": SEES, "candidate_code": ""}
    s = ProblemSession(row, Limits(deadline=time.monotonic() + 300, call_timeout_s=120),
                       device="cpu", cache_dir=str(tmp_path), gpu="5", threads=2)
    try:
        s.start_reference()
        out = s.reference32(s.inputs(1))
        assert np.asarray(out[0]).tolist() == [2.0, 5.0]

        assert s.costs["start_reference"] > 0 and s.costs["ref_f32"] > 0
        assert s.costs["ref_inputs"] > 0
    finally:
        s.close()
