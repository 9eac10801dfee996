"""Spreading kernels over GPUs and sizing workers' thread pools (kcv.audit.gpus, workers.py):
the pool hands out the least-loaded GPU, CUDA_VISIBLE_DEVICES decides which ids exist,
audit_kernel gives the kernel's GPU and thread count to its sizing and to every worker
verify_module starts, and a worker started for a GPU and a thread count really sees them (a
reference whose get_inputs shape is what its process sees, sized on the CPU)."""

import threading

import pytest

from kcv.audit.gpus import GpuPool, visible_gpus
from kcv.audit.workers import worker_command


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
        return x * 2.0
def get_inputs():
    return [torch.randn(torch.get_num_threads(), int(os.environ.get("CUDA_VISIBLE_DEVICES", "1")))]
def get_init_inputs():
    return []
"""


def test_a_sizing_worker_sees_its_gpu_and_thread_count(tmp_path):
    pytest.importorskip("kcv._core")
    pytest.importorskip("torch")
    from kcv.audit.sizing import size_problem

    row = {"id": "sees", "reference_code": SEES}
    sized = size_problem(row, device="cpu", cache_dir=str(tmp_path), constants=None, over_bytes=0,
                         gpu="5", threads=2, memory_limit_bytes=32 << 30, timeout_s=300)
    assert sized.input_bytes == 2 * 5 * 4  # f32[threads, gpu]
    assert sized.output_bytes == 2 * 5 * 4 and not sized.sized_on_meta


def test_audit_kernel_gives_the_kernels_gpu_and_threads_to_all_its_workers(monkeypatch):
    pytest.importorskip("kcv._core")
    from kcv import _core
    from kcv.audit import kernel as kernel_mod
    from kcv.audit.sizing import Sized

    sized, verified = [], []

    def size_problem(row, **kw):
        sized.append((kw["gpu"], kw["threads"]))
        return Sized(16, 16, False)

    def verify_module(row, **kw):
        verified.append(kw["worker_command"])
        return {"kernel_id": row["id"], "status": "ok", "message": "", "replica_verdict": None,
                "verdicts": [], "timings": {}, "out_of_memory": False}

    monkeypatch.setattr(kernel_mod, "size_problem", size_problem)
    monkeypatch.setattr(_core, "verify_module", verify_module)
    pool = GpuPool(["3", "7"])
    cfg = kernel_mod.KernelConfig(profiles=["strict"], device="cuda", gpu_pool=pool,
                                  worker_threads=4)
    with pool.take():  # GPU 3 is busy: the kernel gets 7
        kernel_mod.audit_kernel({"id": "k", "reference_code": "", "candidate_code": ""}, cfg)
    assert sized == [("7", 4)]
    # The candidate's worker runs in its kernel's sandbox where the host has one: the sandbox's
    # command ends with the worker's own.
    inner = worker_command("7", 4)
    assert len(verified) == 1 and verified[0][-len(inner):] == inner, verified
    sandboxed = bool(_core.sandbox_support()["available"])
    assert (verified[0] != inner) == sandboxed, verified
    assert pool.in_flight == [0, 0]  # given back with the kernel
