"""A CUDA worker page-locks a large call file for the call and unlocks it before the unmap
(kcv.worker.pinning, kcv.worker.calls); a failed registration leaves no CUDA error behind.

The CUDA runtime is replaced by a recording stand-in, so these run on any machine; the real
registration's speed is bench/audit/worker_copies.py's."""

import pytest

from kcv.worker import calls, pinning


class FakeRuntime:
    """cudaHostRegister / cudaHostUnregister / cudaGetLastError, recorded; `register_status` is
    what cudaHostRegister returns (0: success)."""

    def __init__(self, register_status=0):
        self.register_status = register_status
        self.log = []

    def cudaHostRegister(self, addr, size, flags):
        self.log.append(("register", addr, size, flags))
        return self.register_status

    def cudaHostUnregister(self, addr):
        self.log.append(("unregister", addr))
        return 0

    def cudaGetLastError(self):
        self.log.append(("clear",))
        return 0


class Loaded:
    """A loaded object serving `run`: records whether the file was pinned during its call."""

    kinds = ("run",)
    role = "candidate"

    def __init__(self, device, runtime):
        self.device, self.runtime = device, runtime
        self.seen = None

    def call(self, task, inputs, outputs, kwargs):
        self.seen = list(self.runtime.log)
        return None


@pytest.fixture
def runtime(monkeypatch):
    fake = FakeRuntime()
    monkeypatch.setattr(pinning, "_runtime", lambda: fake)
    return fake


def call_file(tmp_path, size):
    path = tmp_path / "call"
    with open(path, "wb") as f:
        f.truncate(size)
    return {"type": "call", "id": 1, "shm": {"path": str(path), "size": size},
            "task": {"kind": "run", "seed": 0}, "inputs": [], "outputs": []}


def test_a_cuda_workers_large_file_is_registered_for_the_call_and_unregistered_after(
        tmp_path, runtime, monkeypatch):
    closed = []
    real_close = calls.CallFile.close
    monkeypatch.setattr(calls.CallFile, "close",
                        lambda self: (closed.append(list(runtime.log)), real_close(self)))
    loaded = Loaded("cuda", runtime)
    reply = calls.serve_call(loaded, call_file(tmp_path, pinning.PIN_FROM))
    assert reply["status"] == "ok"
    (kind, addr, size, flags), = loaded.seen  # registered before the task ran
    assert (kind, size, flags) == ("register", pinning.PIN_FROM, 0)
    assert closed == [[("register", addr, size, 0), ("unregister", addr)]]  # before the unmap


@pytest.mark.parametrize("device, size", [("cpu", 64 << 20), ("cuda", pinning.PIN_FROM - 1)])
def test_a_cpu_worker_or_a_small_file_is_never_registered(tmp_path, runtime, device, size):
    loaded = Loaded(device, runtime)
    assert calls.serve_call(loaded, call_file(tmp_path, size))["status"] == "ok"
    assert runtime.log == []


def test_a_failed_registration_clears_the_error_and_the_call_runs_pageable(tmp_path, monkeypatch):
    fake = FakeRuntime(register_status=1)
    monkeypatch.setattr(pinning, "_runtime", lambda: fake)
    loaded = Loaded("cuda", fake)
    assert calls.serve_call(loaded, call_file(tmp_path, pinning.PIN_FROM))["status"] == "ok"
    assert [e[0] for e in fake.log] == ["register", "clear"]  # and never unregistered


def test_the_real_runtime_without_a_gpu_registers_nothing(tmp_path):
    """On a machine without a GPU (CI), pin() through the process's own CUDA runtime (when torch
    maps one) fails quietly: False, no exception. (Without a driver the runtime's error is its
    initialization's, which stays; the clearing after a failure is the stand-in's test above.)"""
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: registration would succeed")
    pinning._runtime.cache_clear()
    try:
        req = call_file(tmp_path, pinning.PIN_FROM)
        f = calls.CallFile(req["shm"]["path"], req["shm"]["size"])
        try:
            assert pinning.pin(f.addr, f.size) is False
        finally:
            f.close()
    finally:
        pinning._runtime.cache_clear()
