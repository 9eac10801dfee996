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


def test_worker_command_sets_the_environment_only_when_asked():
    plain = worker_command()
    assert plain[1:] == ["-m", "kcv.worker"] and "env" not in plain
    cmd = worker_command("1", 4)
    assert cmd[0] == "env"
    assert cmd[1:4] == ["CUDA_VISIBLE_DEVICES=1", "OMP_NUM_THREADS=4", "MKL_NUM_THREADS=4"]
    assert cmd[4:] == plain


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
