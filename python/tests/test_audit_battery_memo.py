"""The battery's cost cuts must not change a verdict: the gates it judges once for every profile
(battery.PROFILE_BLIND) give the same result under each profile when given the same tau, a
probe's oracle is built once per TF32 flag set, a profile-blind gate is judged again when the
profiles' scales differ, and a NaN probe borrows its seed probe's error scale."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")

from kcv.audit import battery, error_model  # noqa: E402

Y = np.linspace(-1.0, 1.0, 16)
X = [("x", Y.astype(np.float32))]


def call(values, *, mutated=False):
    return core.CallRecord(status="ok", outputs=[np.asarray(values, dtype=np.float32)],
                           inputs_unchanged=not mutated)


def oracle(tau):
    return [{"dtype": "f32", "shape": Y.shape, "value": Y,
             "tau": np.full(Y.shape, tau), "declared": Y.copy()}]


def judged(gate, profile, calls, tau, repetitions=1):
    res = core.judge(gate, calls=calls, oracle=oracle(tau), inputs=X,
                     contract_json=json.dumps({"deterministic": True, "profile": profile}),
                     op_class="elementwise", label="p", repetitions=repetitions,
                     injections=[(0, 0, "nan")] if gate == "EXC-01" else [])
    return {k: res[k] for k in ("verdict", "summary", "worst_ratio", "violations")}


CASES = {  # gate -> (calls that pass, calls that fail) at tau 1e-3
    "CMP-01": ([call(Y)], [call(Y + 0.5)]),
    "CMP-02": ([call(Y)], [call(Y, mutated=True)]),
    "CMP-03": ([call(Y)], [call(Y + 0.5)]),
    "EXC-01": ([call(Y)], [call(np.where(np.arange(16) == 3, np.nan, Y))]),
    "ORD-02": ([call(Y), call(Y)], [call(Y), call(np.nextafter(Y.astype(np.float32), 2))]),
    "RES-01": ([call(Y)], [call(Y, mutated=True)]),
}


@pytest.mark.parametrize("gate", sorted(battery.PROFILE_BLIND))
def test_profile_blind_judges_give_one_result_under_every_profile(gate):
    assert gate in CASES, f"{gate} is declared profile-blind but has no case here"
    good, bad = CASES[gate]
    for calls, want in ((good, "pass"), (bad, "fail")):
        results = [judged(gate, p, calls, 1e-3, repetitions=len(calls))
                   for p in error_model.PROFILE_TF32]
        assert results[0]["verdict"] == want, results[0]
        assert all(r == results[0] for r in results[1:]), results


class CountingBattery(battery.Battery):
    def __init__(self, profiles):
        session = SimpleNamespace(problem=SimpleNamespace(outputs=[{"dtype": "f32", "shape": [16]}]),
                                  on_cpu=False)
        super().__init__(session, {"reference_code": "", "problem_name": "1_relu", "level": 1},
                         profiles)
        self.judged = []

    def _judge(self, gate, probe, profile, calls, oracle, repetitions):
        self.judged.append((gate, profile))
        return super()._judge(gate, probe, profile, calls, oracle, repetitions)


def probe(eager_tf32):
    """A seed probe of one output: fp64 value Y, eager runs with TF32 off and on."""
    return battery.Probe("seed", X, [Y.copy()], [Y + 1e-7], {(1, 0): [eager_tf32]}, [call(Y)])


def test_equal_scales_judge_a_profile_blind_gate_once_and_copy_it_per_profile():
    b = CountingBattery(["strict", "pytorch-eager"])
    p = probe(Y + 1e-7)  # the TF32 run agrees with the flags-off run: equal scales
    recs = [b.judge("CMP-01", p, prof) for prof in b.profiles]
    assert b.judged == [("CMP-01", "strict")]
    assert [r["profile"] for r in recs] == ["strict", "pytorch-eager"]
    assert recs[0]["verdict"] == recs[1]["verdict"] == "pass"
    b.judge("PRC-01", p, "strict"), b.judge("PRC-01", p, "pytorch-eager")
    assert b.judged[1:] == [("PRC-01", "strict"), ("PRC-01", "pytorch-eager")]  # reads the profile


def test_different_scales_judge_again_and_can_differ():
    b = CountingBattery(["strict", "pytorch-eager"])
    p = probe(Y + 2e-3)  # TF32 moves eager: pytorch-eager's tau is wider
    p.calls = [call(Y + 1e-3)]  # within the wide tau only
    strict, eager = (b.judge("CMP-01", p, prof) for prof in b.profiles)
    assert b.judged == [("CMP-01", "strict"), ("CMP-01", "pytorch-eager")]
    assert (strict["verdict"], eager["verdict"]) == ("fail", "pass")


def test_oracle_is_built_once_per_tf32_flag_set():
    b = CountingBattery(["strict", "cuda-default", "pytorch-eager"])
    p = probe(Y + 1e-7)
    assert b.oracle(p, "strict") is b.oracle(p, "cuda-default")  # both TF32 off
    assert b.oracle(p, "strict") is not b.oracle(p, "pytorch-eager")


def test_a_nan_probe_borrows_its_seed_probes_scale():
    b = CountingBattery(["strict"])
    p0 = probe(Y + 1e-7)
    value = Y.copy()
    value[0] = np.nan
    nan_probe = battery.Probe("nan", X, [value], None, scale_from=p0)
    (seed_entry,), (nan_entry,) = b.oracle(p0, "strict"), b.oracle(nan_probe, "strict")
    assert nan_entry["scale"] == seed_entry["scale"] > 0
    assert (nan_entry["tau_rel"], nan_entry["tau_abs"]) == (seed_entry["tau_rel"], seed_entry["tau_abs"])


def test_the_judge_expands_tau_rel_and_abs_as_tau_from_scale_does():
    value = np.array([1.0, -4.0, np.nan, np.inf, 0.0])
    entry = error_model.oracle_entry("f32", value, None, big_e=1e-6)
    tau = error_model.tau_from_scale(value, "f32", 1e-6)
    assert tau[2] == tau[3] == 0  # non-finite y*: judged by class
    # A candidate just inside tau passes, one 1.5 tau away fails, element by element.
    for k in (0, 1, 4):
        for factor, verdict in ((0.999, "pass"), (1.5, "fail")):
            got = value.copy()
            got[k] += factor * tau[k]
            res = core.judge("CMP-01", calls=[core.CallRecord(outputs=[got])],
                             oracle=[{**entry, "dtype": "f64"}], inputs=X)
            assert res["verdict"] == verdict, (k, factor, res["summary"])
