"""The audit's time bounds and host-memory admission for one kernel (kernel.audit_kernel), with
real workers on the CPU where the behaviour is the pipeline's.

- --load-timeout bounds the workers' load (imports, compiles): a candidate that sleeps at import
  ends as `timeout` with a message naming the candidate's load.
- --kernel-timeout bounds what comes after the load: it is set below the load's own wall time
  here, so the kernel only gets as far as the gates if the load is not counted against it;
  probes not run when the time is up are `error` "not run", never passes (docs/08_audit.md).
- a candidate that hangs at the reference-shape call is `timeout`, within --kernel-timeout of its
  load: the deadline covers the replica too, and no call outlives it.
- a candidate that crashes on one probe is a gate finding (call_failed), not a kernel status:
  the worker is restarted and the other gates are judged.
- host memory: a kernel that may be postponed gives up when its estimate does not fit, one over
  the whole budget is sent to run alone (sizing real, verify_module a stand-in: these are about
  admission, not verdicts).
(mode 2's TF32 flags are the reference32 task's now: test_worker_tasks.py.)"""

import json
import time

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit import kernel as kernel_mod  # noqa: E402
from kcv.audit.kernel import KernelConfig, audit_kernel  # noqa: E402

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

# Its import takes 12 s (so the load is longer than the 10 s kernel time whatever the machine),
# each forward 0.5 s (so the replica ends within 10 s and the gates then run out of time).
SLOW_FORWARD = SLEEPS_IN_FORWARD.replace("time.sleep(600)", "time.sleep(0.5)").replace(
    "import torch\n", "import torch\ntime.sleep(12)\n", 1)

CRASHES_ON_A_LEADING_NAN = """
import os
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        if torch.isnan(x.reshape(-1)[0]):
            os.kill(os.getpid(), 9)
        return x * 2.0
"""


def row(kernel_id: str, candidate: str, reference: str = REFERENCE) -> dict:
    return {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 1,
            "problem_name": "1_double.py", "language": "pytorch",
            "reference_code": reference, "candidate_code": candidate}


def config(servers, **kw) -> KernelConfig:
    """A kernel's config; `servers` (conftest.warm_servers): its reference workers' warm
    parents."""
    kw.setdefault("call_timeout_s", 120)
    return KernelConfig(profiles=["strict", "pytorch-eager"], device="cpu",
                        memory_limit_bytes=32 << 30, forkservers=servers, **kw)


def verdicts(out: dict) -> dict:
    return {(v["gate"], v["profile"]): v for v in out["verdicts"]}


def test_a_load_past_the_load_timeout_is_a_timeout_naming_the_load(tmp_path, warm_servers):
    cfg = config(warm_servers, load_timeout_s=15, kernel_timeout_s=900, cache_dir=str(tmp_path))
    t0 = time.monotonic()
    out = audit_kernel(row("sleeps_at_import", SLEEPS_AT_IMPORT), cfg)
    assert out["status"] == "timeout", out["message"]
    assert out["message"].startswith("the candidate: "), out["message"]
    assert "load: no reply in time" in out["message"] and "killed by kcv" in out["message"]
    assert out["verdicts"] == []
    assert out["replica_verdict"] == "rejected"  # KernelBench's check fails on it too
    assert time.monotonic() - t0 < 120  # bounded by the load timeout, not the import's sleep


def test_the_kernel_timeout_starts_after_the_load(tmp_path, warm_servers):
    timings: dict = {}
    # 10 s for the replica's five trials (0.5 s forwards) on a loaded 2-core host, and the
    # candidate's import alone sleeps 12 s
    cfg = config(warm_servers, load_timeout_s=300, kernel_timeout_s=10, cache_dir=str(tmp_path))
    out = audit_kernel(row("slow_forward", SLOW_FORWARD), cfg, timings)
    # the loads took longer than the kernel's 10 s, and still the replica and gates ran
    assert timings["load"] > cfg.kernel_timeout_s, timings
    assert out["replica_verdict"] == "accepted", out["message"]
    assert "probing stopped: the time limit was reached" in out["message"], out["message"]
    by = verdicts(out)
    assert len(by) == 24  # 12 gates x 2 profiles
    not_run = [v for v in by.values() if v["reason"].startswith("not run: the time limit")]
    assert not_run and all(v["verdict"] == "error" for v in not_run), by
    assert not any(v["verdict"] == "fail" for v in by.values()), by


@pytest.fixture(scope="module")
def hung(tmp_path_factory, warm_servers):
    """A candidate whose forward sleeps 600 s, with a kernel time of 3 s and calls of 20 s."""
    timings: dict = {}
    cfg = config(warm_servers, load_timeout_s=300, kernel_timeout_s=3, call_timeout_s=20,
                 cache_dir=str(tmp_path_factory.mktemp("hung")))
    t0 = time.monotonic()
    out = audit_kernel(row("sleeps_in_forward", SLEEPS_IN_FORWARD), cfg, timings)
    return out, timings, time.monotonic() - t0


def test_a_candidate_that_hangs_at_the_reference_shape_is_a_timeout(hung):
    out, timings, _ = hung
    assert out["status"] == "timeout", out["message"]
    assert "at the reference shape" in out["message"] and "timeout" in out["message"]
    assert "load" in timings  # the load finished, whatever it took against the 3 s limit
    assert out["verdicts"] == []  # a kernel status: no gate is judged


def test_a_hung_kernel_ends_within_the_kernel_timeout_after_its_load(hung):
    out, timings, _ = hung
    # docs/08: sizing (the reference's load) + the candidate's load + kernel time
    assert timings["total"] - timings["load"] - timings["size"] < 3 + 10, timings


def test_a_crash_on_one_probe_is_a_finding_and_the_other_gates_are_judged(tmp_path,
                                                                           warm_servers):
    # The NaN probes kill the worker; it is started again and serves the later probes.
    out = audit_kernel(row("crash_on_nan", CRASHES_ON_A_LEADING_NAN),
                       config(warm_servers, cache_dir=str(tmp_path), kernel_timeout_s=600,
                              load_timeout_s=600))
    assert out["status"] == "ok", out["message"]  # the reference-shape check passed
    assert out["replica_verdict"] == "accepted"
    by = verdicts(out)
    for profile in ("strict", "pytorch-eager"):
        exc = by[("EXC-01", profile)]
        assert (exc["verdict"], exc["finding"]) == ("fail", "call_failed"), exc
        for gate in ("CMP-01", "ORD-02", "CMP-03", "PRC-01", "RES-01"):  # around the crash
            assert by[(gate, profile)]["verdict"] == "pass", (gate, out["verdicts"])
    assert "crash" in by[("EXC-01", "strict")]["evidence_json"], by[("EXC-01", "strict")]


def ok_outcome(row, **_kwargs):
    """verify_module's stand-in: these tests are about admission."""
    return {"kernel_id": row["id"], "status": "ok", "message": "", "replica_verdict": "accepted",
            "verdicts": [], "op_class": "elementwise", "determinism_declared": True,
            "facts": "{}", "timings": {"load": 0.0}, "out_of_memory": False}


GOOD = REFERENCE.replace("class Model(", "class ModelNew(")


def test_a_kernel_that_may_be_postponed_gives_up_when_memory_stays_busy(tmp_path, monkeypatch,
                                                                         warm_servers):
    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    called = []
    monkeypatch.setattr(core, "verify_module", lambda r, **kw: called.append(kw) or ok_outcome(r))
    need = estimate_host_bytes(8 * 4, 8 * 4)  # one f32[8] input, one f32[8] output (sized)
    gate = MemoryGate(need)
    cfg = config(warm_servers, cache_dir=str(tmp_path), memory_gate=gate, memory_postpone_s=0.5)
    with gate.hold(1):  # another kernel's share: no room for this one
        out = audit_kernel(row("busy", GOOD), cfg, may_postpone=True)
        assert out["status"] == "postponed", out["message"]
        assert "host memory" in out["message"]
        assert out["host_bytes"] == need  # what the orchestrator waits to fit
        assert gate.used == 1 and called == []
    timings: dict = {}
    out = audit_kernel(row("busy", GOOD), cfg, timings, may_postpone=True)  # room now
    assert out["status"] == "ok", out["message"]
    assert gate.used == 0 and len(called) == 1 and "memory_wait" in timings
    assert called[0]["base_constants"] == {}  # small: judged at the reference shape


def test_a_kernel_over_the_host_memory_budget_waits_to_run_alone(tmp_path, monkeypatch,
                                                                  warm_servers):
    from kcv.audit.memory import MemoryGate, estimate_host_bytes

    monkeypatch.setattr(core, "verify_module", ok_outcome)
    need = estimate_host_bytes(8 * 4, 8 * 4)
    small = MemoryGate(need - 1)
    cfg = config(warm_servers, cache_dir=str(tmp_path), memory_gate=small)
    out = audit_kernel(row("big", GOOD), cfg)
    assert out["status"] == "run_alone", out["message"]
    assert "host memory by estimate" in out["message"]
    timings: dict = {}
    out = audit_kernel(row("big", GOOD), cfg, timings, alone=True)
    assert out["status"] == "ok", out["message"]
    assert small.used == 0 and "memory_wait" in timings


def test_inputs_over_the_limits_run_alone_or_are_an_error_without_running(tmp_path, monkeypatch,
                                                                           warm_servers):
    called = []
    monkeypatch.setattr(core, "verify_module", lambda r, **kw: called.append(r) or ok_outcome(r))
    alone = config(warm_servers, cache_dir=str(tmp_path), alone_input_bytes=31)
    out = audit_kernel(row("alone", GOOD), alone)
    assert out["status"] == "run_alone" and "GiB of inputs" in out["message"], out
    out = audit_kernel(row("alone", GOOD), alone, alone=True)
    assert out["status"] == "ok"
    out = audit_kernel(row("too_big", GOOD),
                       config(warm_servers, cache_dir=str(tmp_path), max_input_bytes=31))
    assert out["status"] == "error" and "--max-input-gb" in out["message"], out
    assert out["verdicts"] == [] and len(called) == 1
    # the outcome audit_kernel makes itself is one the store takes
    from kcv.audit.orchestrator import kernel_info

    store = core.Store(str(tmp_path / "s.db"))
    run_id = store.begin_run({"generator_version": "test"})
    store.enqueue([kernel_info(row("too_big", GOOD))])
    store.record(out, run_id)
    assert store.kernel("too_big")["status"] == "error"


# A reference that runs out of host memory at every shape but the reference one (8 elements):
# this machine's limit at that moment, which must not pass for the reference refusing the probe
# (a gate not applicable), since the same row on a machine with more room is judged.
OOM_OFF_SHAPE = REFERENCE.replace("        return x * 2.0", """        if x.numel() != 8:
            raise MemoryError("no room for this shape")
        return x * 2.0""").replace("import torch\n", "import torch\nsize = 8\n", 1).replace(
    "torch.randn(8)", "torch.randn(size)")


def test_a_reference_out_of_memory_is_a_harness_error_not_a_refusal(tmp_path, warm_servers):
    out = audit_kernel(row("reference_oom", GOOD, reference=OOM_OFF_SHAPE),
                       config(warm_servers, kernel_timeout_s=600, cache_dir=str(tmp_path)))
    assert out["status"] == "ok" and out["replica_verdict"] == "accepted", out["message"]
    oom = [v for v in out["verdicts"] if "MemoryError" in v["reason"]]
    assert oom, [(v["gate"], v["verdict"], v["reason"]) for v in out["verdicts"]]
    assert all(v["verdict"] == "error" for v in oom), oom
    assert not any("refuse" in v["reason"] and "MemoryError" in v["reason"]
                   for v in out["verdicts"]), out["verdicts"]
    assert out.get("out_of_memory"), "the kernel is to be run again with the machine to itself"
