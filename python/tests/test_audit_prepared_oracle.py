"""A probe's oracle is converted once (kcv._core.Oracle) and the judges read the calls' outputs in
place: every gate gives the record it gives from the entry dicts themselves, the calls are left as
they were, and the battery converts one oracle per distinct reference value, not one per judge
call."""

import json

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")

from kcv.audit import error_model  # noqa: E402
from test_audit_battery_release import FakeSession, run_relu_battery  # noqa: E402

GATES = ("CMP-01", "CMP-02", "CMP-03", "EXC-01", "EXC-02", "ORD-02", "PRC-01", "RES-01")


def entries_of_every_kind():
    """Oracle entries of the error model's forms: global and banded scales, a float32 declared
    value, non-finite and zero reference values."""
    rng = np.random.default_rng(7)
    y = rng.standard_normal(4096) * np.exp(rng.uniform(-6, 6, 4096))
    y[:4] = [0.0, -0.0, np.nan, np.inf]
    eager = (y * (1 + rng.standard_normal(y.size) * 1e-7)).astype(np.float32)
    cand = (y * (1 + rng.standard_normal(y.size) * 3e-7)).astype(np.float32)
    cand[2] = np.nan
    cand[3] = np.inf
    yield "global", [error_model.oracle_entry("f32", y, eager)], cand
    yield "banded", [error_model.oracle_entry("f32", y, eager, error_scale="banded")], cand
    far = cand.copy()
    far[100] *= 1.01
    yield "failing", [error_model.oracle_entry("f32", y, eager)], far


@pytest.mark.parametrize("gate", GATES)
def test_a_prepared_oracle_judges_as_its_entries(gate):
    inputs = [("x", np.linspace(-3, 3, 4096, dtype=np.float32))]
    for what, entries, cand in entries_of_every_kind():
        calls = [core.CallRecord(outputs=[cand]), core.CallRecord(outputs=[cand.copy()])]
        before = [c.outputs[0].tobytes() for c in calls]
        kw = dict(calls=calls, inputs=inputs, op_class="reduction", repetitions=2,
                  contract_json=json.dumps({"deterministic": True, "profile": "strict"}),
                  injections=[(0, 2, "nan")] if gate == "EXC-01" else [])
        want = core.judge(gate, oracle=entries, **kw)
        prepared = core.Oracle(entries)
        assert prepared.outputs == 1
        first, again = core.judge(gate, oracle=prepared, **kw), core.judge(gate, oracle=prepared, **kw)
        assert first == want == again, (what, want["summary"], first["summary"])
        assert want["verdict"] != "error", (what, want["summary"])
        assert [c.outputs[0].tobytes() for c in calls] == before  # read in place, not written


def test_an_oracle_with_a_bad_entry_is_refused_when_made():
    with pytest.raises(ValueError, match="tau"):
        core.Oracle([{"dtype": "f32", "shape": (2,), "value": np.zeros(2)}])


def test_the_battery_converts_one_oracle_per_reference_value(monkeypatch):
    made = []
    real = core.Oracle

    def counting(entries):
        made.append(len(entries))
        return real(entries)

    monkeypatch.setattr(core, "Oracle", counting)
    s = FakeSession()
    b, records = run_relu_battery(s)
    # seed 11's probe (its shifted and non-contiguous variants share its values), its two NaN
    # probes, seed 22's probe: four fp64 values, four conversions, for both profiles' judges.
    assert len(s.values) == 4
    assert made == [1, 1, 1, 1]
    assert not b._prepared
    assert all(r["verdict"] in ("pass", "not_applicable") for r in records), records
