"""The battery judges each probe as it is made and lets its arrays go (battery.Battery._release):
by the time the second seed's probe is drawn, no fp64 value of the first seed's probes is held,
and the verdicts are those of judging everything at the end (test_audit_sample checks them on
real workers)."""

import gc
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")

from kcv.audit import battery  # noqa: E402

Y = np.linspace(-1.0, 1.0, 64)


class FakeSession:
    """A worker pair's interface with the workers replaced by arrays: every fp64 value it hands
    out is watched through a weak reference."""

    on_cpu = True

    def __init__(self):
        self.problem = SimpleNamespace(outputs=[{"dtype": "f32", "shape": [64]}],
                                       tensor_inputs=lambda: [{"dtype": "f32", "shape": [64]}])
        self.values: list[weakref.ref] = []
        self.alive_when_drawn: dict[int, int] = {}  # seed -> watched values alive then
        self.forgotten: list[int] = []

    def inputs(self, seed):
        gc.collect()
        self.alive_when_drawn[seed] = sum(r() is not None for r in self.values)
        return [("x", Y.astype(np.float32))]

    def reference64(self, inputs, key=None):
        v = np.asarray(inputs[0][1], dtype=np.float64).copy()
        self.values.append(weakref.ref(v))
        return [v]

    def reference32(self, inputs, key=None, tf32=None):
        return [np.asarray(inputs[0][1], dtype=np.float32).copy()]

    def run_candidate(self, inputs, **opts):
        return core.CallRecord(status="ok", outputs=[np.asarray(inputs[0][1], np.float32)],
                               inputs_unchanged=True)

    def forget(self, seed):
        self.forgotten.append(seed)


def run_relu_battery(session) -> tuple:
    """The battery of a ReLU problem under both profiles, seeds 11 and 22: (battery, records)."""
    b = battery.Battery(session, {"reference_code": "", "problem_name": "1_relu", "level": 1},
                        ["strict", "pytorch-eager"], seeds=(11, 22))
    try:
        return b, b.run()
    finally:
        b.close()


def test_the_first_seeds_values_are_released_before_the_second_seed_is_drawn():
    s = FakeSession()
    b, records = run_relu_battery(s)
    # seed 11's probe and its two NaN probes made three fp64 values; none is held at seed 22.
    assert len(s.values) >= 3
    assert s.alive_when_drawn == {11: 0, 22: 0}
    assert not b._oracles and not b._verdicts and not b._pending
    assert s.forgotten == [11, 22]  # the session's memo of each seed, once its probes are done
    by_gate = {(r["gate"], r["profile"]): r["verdict"] for r in records}
    assert len(by_gate) == len(records) == 2 * len(battery.ALL_GATES)
    for gate in ("CMP-01", "CMP-02", "CMP-03", "EXC-01", "ORD-02", "PRC-01", "RES-01"):
        assert by_gate[(gate, "strict")] == by_gate[(gate, "pytorch-eager")] == "pass", gate
    gates = [r["gate"] for r in records[::2]]
    assert gates[:7] == ["ORD-02", "CMP-03", "EXC-01", "CMP-01", "PRC-01", "CMP-02", "RES-01"]


def test_a_stopped_battery_still_judges_the_buffer_gates_of_the_calls_made():
    s = FakeSession()
    calls = []

    def run_candidate(inputs, **opts):
        calls.append(opts)
        if len(calls) == 5:  # the first NaN probe's call, after the seed, two shifts, the view
            return core.CallRecord(status="timeout", message="slow")
        return FakeSession.run_candidate(s, inputs, **opts)

    s.run_candidate = run_candidate
    b = battery.Battery(s, {"reference_code": "", "problem_name": "1_relu", "level": 1},
                        ["strict"], seeds=(11, 22))
    with pytest.raises(battery.StopBattery):
        b.run()
    b.close()
    gates = [r["gate"] for r in b.records]
    assert gates == ["ORD-02", "CMP-03", "CMP-02", "RES-01"]
    assert all(r["verdict"] == "pass" for r in b.records)
    assert b.kernel_status == "timeout"


def test_a_profile_named_twice_is_judged_once():
    import json

    def evidence(profiles):
        b = battery.Battery(FakeSession(), {"reference_code": "", "problem_name": "1_relu",
                                            "level": 1}, profiles, seeds=(11, 22))
        try:
            return [(r["gate"], r["profile"], json.loads(r["evidence_json"]).get("probes"))
                    for r in b.run()]
        finally:
            b.close()

    assert evidence(["strict", "strict"]) == evidence(["strict"])
