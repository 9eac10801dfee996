"""The audit's two time bounds and mode 2's TF32 flags, with real workers on the CPU.

- --load-timeout bounds the workers' load (imports, compiles): a candidate that sleeps at import
  ends as `timeout` with a message naming the load.
- --kernel-timeout bounds what comes after the load: it is set below the load's own wall time
  here, so the kernel only gets as far as a candidate that sleeps in forward if the load is not
  counted against it.
- mode 2 with cudnn_tf32 / matmul_tf32 runs under those flags and restores them after the call:
  the reference model returns the flags it sees (the flags exist on the CPU too)."""

import time

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit.kernel import KernelConfig, audit_kernel  # noqa: E402
from kcv.audit.session import Limits, ProblemSession, run_call  # noqa: E402

REFERENCE = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
"""

SLEEPS_AT_IMPORT = """
import time
import torch
time.sleep(600)
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x * 2.0
"""

SLEEPS_IN_FORWARD = """
import time
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        time.sleep(600)
        return x * 2.0
"""

FLAGS_REFERENCE = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        flags = [float(torch.backends.cudnn.allow_tf32), float(torch.backends.cuda.matmul.allow_tf32)]
        return x.sum() * 0 + torch.tensor(flags, dtype=x.dtype)
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
"""


def row(kernel_id: str, candidate: str, reference: str = REFERENCE) -> dict:
    return {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 1,
            "problem_name": "1_double.py", "language": "pytorch",
            "reference_code": reference, "candidate_code": candidate}


def config(**kw) -> KernelConfig:
    return KernelConfig(profiles=["strict", "pytorch-eager"], device="cpu", call_timeout_s=120,
                        memory_limit_bytes=32 << 30, **kw)


def test_a_load_past_the_load_timeout_is_a_timeout_naming_the_load(tmp_path):
    cfg = config(load_timeout_s=25, kernel_timeout_s=900, cache_dir=str(tmp_path))
    t0 = time.monotonic()
    out = audit_kernel(row("sleeps_at_import", SLEEPS_AT_IMPORT), cfg)
    assert out["status"] == "timeout", out["message"]
    assert "load (compile) took longer than 25 s" in out["message"]
    assert time.monotonic() - t0 < 300  # bounded by the load timeout, not the import's sleep


def test_the_kernel_timeout_starts_after_the_load(tmp_path):
    timings: dict = {}
    cfg = config(load_timeout_s=300, kernel_timeout_s=3, cache_dir=str(tmp_path))
    out = audit_kernel(row("sleeps_in_forward", SLEEPS_IN_FORWARD), cfg, timings)
    assert out["status"] == "timeout", out["message"]
    assert "load" in timings  # the load finished, whatever it took against the 3 s limit
    assert "took longer than" not in out["message"]
    assert "timed out" in out["message"] or "kernel time limit" in out["message"]


def test_mode2_runs_under_the_tf32_flags_and_restores_them(tmp_path):
    r = row("flags", "", FLAGS_REFERENCE)
    s = ProblemSession(r, Limits(deadline=time.monotonic() + 300, call_timeout_s=120),
                       device="cpu", cache_dir=str(tmp_path))
    try:
        s.start_reference()
        x = s.inputs(1)
        spec = [("f64", (2,))]

        def mode2(**flags):
            rec = run_call(s.reference, x, spec, mode=2, timeout_ms=120000,
                           extra_params={k: float(v) for k, v in flags.items()})
            assert rec.status == "ok", rec.message
            return tuple(np.asarray(rec.outputs[0]).tolist())

        assert mode2() == (0.0, 0.0)  # today's behaviour: both off
        assert mode2(cudnn_tf32=1, matmul_tf32=0) == (1.0, 0.0)
        assert mode2() == (0.0, 0.0)  # restored
        assert mode2(cudnn_tf32=1, matmul_tf32=1) == (1.0, 1.0)
        assert mode2(cudnn_tf32=0, matmul_tf32=0) == (0.0, 0.0)
        rec = run_call(s.reference, x, spec, mode=0, timeout_ms=120000)
        assert rec.status == "ok" and tuple(np.asarray(rec.outputs[0]).tolist()) == (0.0, 0.0)
        bad = run_call(s.reference, x, spec, mode=2, timeout_ms=120000,
                       extra_params={"cudnn_tf32": 2.0})
        assert bad.status != "ok" and "cudnn_tf32" in bad.message
    finally:
        s.close()


GOOD = REFERENCE.replace("class Model(", "class ModelNew(")


def test_a_kernel_that_may_be_postponed_gives_up_when_memory_stays_busy(tmp_path):
    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    need = estimate_host_bytes(8 * 4, 8 * 4)  # one f32[8] input, one f32[8] output
    gate = MemoryGate(need)
    cfg = config(cache_dir=str(tmp_path), memory_gate=gate, memory_postpone_s=0.5)
    with gate.hold(1):  # another kernel's share: no room for this one
        out = audit_kernel(row("busy", GOOD), cfg, may_postpone=True)
        assert out["status"] == "postponed", out["message"]
        assert "host memory" in out["message"] and out["verdicts"] == []
        assert out["host_bytes"] == need  # what the orchestrator waits to fit
        assert gate.used == 1
    out = audit_kernel(row("busy", GOOD), cfg, may_postpone=True)  # room now
    assert out["status"] == "ok", out["message"]
    assert gate.used == 0


def test_a_kernel_over_the_host_memory_budget_waits_to_run_alone(tmp_path):
    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    need = estimate_host_bytes(8 * 4, 8 * 4)  # one f32[8] input, one f32[8] output
    small = MemoryGate(need - 1)
    out = audit_kernel(row("big", GOOD), config(cache_dir=str(tmp_path), memory_gate=small))
    assert out["status"] == "run_alone", out["message"]
    assert "host memory by estimate" in out["message"]
    timings: dict = {}
    out = audit_kernel(row("big", GOOD), config(cache_dir=str(tmp_path), memory_gate=small),
                       timings, alone=True)
    assert out["status"] == "ok", out["message"]
    assert small.used == 0 and "memory_wait" in timings


CRASHES_ON_A_LEADING_NAN = """
import os
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        if torch.isnan(x.reshape(-1)[0]):
            os.kill(os.getpid(), 9)
        return x * 2.0
"""


def test_a_crash_beside_the_reference_restarts_the_worker_and_the_battery_goes_on(tmp_path):
    # The NaN probes' candidate calls run on the battery's candidate lane, beside the reference's
    # fp64 run: the first one kills the worker, which restarts there and serves the later probes.
    out = audit_kernel(row("crash_on_nan", CRASHES_ON_A_LEADING_NAN),
                       config(cache_dir=str(tmp_path), kernel_timeout_s=600, load_timeout_s=600))
    assert out["status"] == "crash", out["message"]
    assert "candidate crashed" in out["message"]
    verdicts = {(v["gate"], v["profile"]): v["verdict"] for v in out["verdicts"]}
    assert verdicts[("EXC-01", "strict")] == "fail"
    for gate in ("CMP-01", "ORD-02", "CMP-03", "PRC-01"):  # judged after or around the crash
        assert verdicts[(gate, "strict")] == "pass", (gate, out["verdicts"])


def test_the_session_memoises_only_the_kept_seeds_and_forgets_on_request():
    s = ProblemSession(row("memo", GOOD), Limits(deadline=time.monotonic() + 60), device="cpu")
    made = []

    def reference_call(what, inputs, specs, mode, extra=None):
        made.append((what, mode))
        return [np.zeros(4)]

    s._reference_call, s._f64_specs, s._eager_specs = reference_call, list, list
    s.keep_seeds = {7}
    x = [("x", np.zeros(4, np.float32))]
    for key in (7, 7, 8, 8):  # a replica trial's seed (8) is not kept: run each time
        s.reference64(x, key=key)
        s.reference32(x, key=key)
    assert made.count(("float64 run", 0)) == 3 and made.count(("float32 run", 2)) == 3
    s.forget(7)
    s.reference64(x, key=7)
    s.reference32(x, key=7)
    assert len(made) == 8  # both run again once forgotten
