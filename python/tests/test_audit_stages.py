"""The scheduler's typed state (kcv/audit/stages.py): the stages a kernel enters in
kernel.audit_kernel and the decision its run returns (orchestrator.run_kernel's KernelRun), with
sizing and kcv._core.verify_module stood in for, so no worker starts; and the frozen
configuration."""

import dataclasses

import pytest

from kcv.audit import kernel as kernel_mod
from kcv.audit.memory import MemoryGate
from kcv.audit.sizing import Sized
from kcv.audit.stages import Decision, KernelState, Stage

_core = pytest.importorskip("kcv._core")

ROW = {"id": "k", "reference_code": "", "candidate_code": ""}


def stand_ins(monkeypatch, verify_timings, input_bytes=1000):
    monkeypatch.setattr(kernel_mod, "size_problem",
                        lambda row, **_: Sized(input_bytes, 0, False))
    monkeypatch.setattr(_core, "verify_module", lambda row, **_: {
        "kernel_id": row["id"], "status": "ok", "message": "", "replica_verdict": "accepted",
        "verdicts": [], "op_class": "", "determinism_declared": True, "facts": "{}",
        "timings": dict(verify_timings), "out_of_memory": False})


def config(**kw):
    return kernel_mod.KernelConfig(profiles=["strict"], device="cpu", unsandboxed="test", **kw)


def stages_of(run):
    return [name for name, _ in run.stages]


def test_a_judged_kernel_enters_every_stage_up_to_the_probes_in_order(monkeypatch):
    from kcv.audit.orchestrator import run_kernel

    stand_ins(monkeypatch, {"load": 0.1, "replica": 0.2, "gates": 0.3})
    run = run_kernel(ROW, config())
    assert run.decision is Decision.RECORD and run.outcome["status"] == "ok"
    assert stages_of(run) == ["load", "size", "choose_shape", "admitted", "warm_up", "replica",
                              "probes"]
    times = [t for _, t in run.stages]
    assert times == sorted(times)


def test_a_kernel_that_fails_its_load_stops_at_warm_up(monkeypatch):
    from kcv.audit.orchestrator import run_kernel

    stand_ins(monkeypatch, {"load": 0.1})
    assert stages_of(run_kernel(ROW, config()))[-1] == "warm_up"


def test_scheduling_decisions_are_returned_not_raised(monkeypatch):
    from kcv.audit.orchestrator import run_kernel

    stand_ins(monkeypatch, {"load": 0.1}, input_bytes=64)
    run = run_kernel(ROW, config(alone_input_bytes=32))
    assert run.decision is Decision.RUN_ALONE and stages_of(run)[-1] == "choose_shape"

    gate = MemoryGate(1 << 40)
    with gate.hold(1 << 40):  # the budget is full: a kernel that may be postponed gives up
        run = run_kernel(ROW, config(memory_gate=gate, memory_postpone_s=0.05),
                         may_postpone=True)
    assert run.decision is Decision.POSTPONE and run.outcome["host_bytes"] > 0
    assert stages_of(run)[-1] == "choose_shape"
    assert gate.used == 0 and gate.reserved == 0


def test_stages_are_entered_in_order_only():
    state = KernelState("k")
    state.enter(Stage.LOAD)
    state.enter(Stage.SIZE)
    with pytest.raises(ValueError, match="stage load after size"):
        state.enter(Stage.LOAD)
    assert state.stage is Stage.SIZE


def test_the_configurations_are_frozen():
    from kcv.audit.orchestrator import AuditConfig

    cfg = config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.device = "cuda"
    opts = AuditConfig(corpora=[], store="s.db")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.jobs = 2
