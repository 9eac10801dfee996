"""The banded error scale (error_model.band_steps, --error-scale banded) against the global one.

The H200 reverse case (docs/audit/README.md): an output spanning twenty decades, eager's worst
absolute error on its largest elements, and a candidate 1 % off on its small ones. Under one E
per output the C++ judge passes that candidate; under the banded scale it fails, while what the
global scale was built to accept still passes (a reordered fp32 matmul, whose error is absolute:
cancellation) and what it rejects still fails (a silent bf16 downcast). And the H200 false
rejection of a Gemm -> ReLU output (cudal1/h100/L2/P63): its exact zeros, where eager is exact
too, no longer count towards the lowest band's MIN_BAND_COUNT. Expectations come from the
formulas in error_model.py and docs/08_audit.md §3."""

import numpy as np
import pytest

from kcv.audit import error_model

core = pytest.importorskip("kcv._core")

U = error_model.unit_roundoff("f32")


def cmp01(entry, got):
    rec = core.CallRecord(outputs=[np.asarray(got, dtype=np.float32)])
    return core.judge("CMP-01", calls=[rec], oracle=[entry], inputs=[("x", np.zeros(1, np.float32))])


def wide_range(n=4096, seed=3):
    """y* over twenty decades with both signs; eager fp32 with a relative error of a few u."""
    rng = np.random.default_rng(seed)
    y = np.sign(rng.standard_normal(n)) * 10.0 ** rng.uniform(-1, 19, n)
    eager = (y * (1 + 3 * U * rng.standard_normal(n))).astype(np.float32).astype(np.float64)
    return y, eager


def test_steps_increase_and_cover_every_element():
    y, eager = wide_range()
    steps = error_model.band_steps(y, eager, "f32")
    exps = [e for e, _ in steps]
    vals = [x for _, x in steps]
    assert exps == sorted(set(exps)) and vals == sorted(vals) and len(steps) > 10
    per = error_model.steps_per_element(y, steps)
    err = np.abs(eager - y)
    assert np.all(err <= per)  # every element's own eager error is within its band's E
    assert per.max() == error_model.eager_error(y, eager, "f32")  # the top band: the global E


def test_the_lowest_band_pools_at_least_min_band_count_elements():
    y = np.concatenate([[1e-30, 2e-30, 3e-20], np.linspace(1, 2, 100)])
    eager = y.copy()
    eager[0] = y[0] * (1 + 1e-3)  # a large relative error on a lone tiny element
    steps = error_model.band_steps(y, eager, "f32")
    first_exp, first_e = steps[0]
    assert first_exp >= np.frexp(1.0)[1]  # pooled up to the binade where 32 elements are reached
    assert first_e >= abs(eager[0] - y[0])


def test_zeros_take_the_lowest_nonzero_band_not_a_bound_of_zero():
    y = np.concatenate([np.zeros(64), np.linspace(1, 2, 64)])
    steps = error_model.band_steps(y, y.copy(), "f32")  # eager exact everywhere
    per = error_model.steps_per_element(y, steps)
    assert np.all(per[:64] > 0)  # at least one output ulp at the band's top
    assert np.all(per[:64] == per[64])


def relu_output(n=1536, seed=21, sigma=5e-8):
    """A Gemm -> ReLU -> divide output as on cudal1/h100/L2/P63's batch-3 probe (docs/08_audit.md
    §3): half of it exact zeros in both y* and eager, the rest eager's GEMM error, absolute
    (sigma), with one element alone in the lowest binade (y* = 1.2e-4) where eager happened to
    be within 2e-10, as on the H200. Returns y*, eager, the lone element's index, a zero's."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    pos = rng.permutation(n)[: n // 2]
    y[pos] = rng.uniform(2.0**-6, 1.0, pos.size)
    lone = pos[0]
    y[lone] = 1.2066568105e-4
    f32 = lambda x: x.astype(np.float32).astype(np.float64)  # noqa: E731
    eager = np.where(y == 0, 0.0, f32(y + sigma * rng.standard_normal(n)))
    eager[lone] = f32(np.array(y[lone] + 2e-10))
    zero = int(np.flatnonzero(y == 0)[0])
    return y, eager, lone, zero


def reordered(y, seed=22, sigma=5e-8):
    """A candidate with a reordered GEMM: its own error of the same absolute scale, and the
    same zeros."""
    noise = sigma * np.random.default_rng(seed).standard_normal(y.size)
    return np.where(y == 0, 0.0, (y + noise).astype(np.float32).astype(np.float64))


def test_exact_zeros_of_a_relu_do_not_fill_the_lowest_band():
    y, eager, lone, _ = relu_output()
    steps = error_model.band_steps(y, eager, "f32")
    informative = np.abs(y[y != 0])
    assert np.sum(np.frexp(informative)[1] <= steps[0][0]) >= error_model.MIN_BAND_COUNT
    # zeros take the first step's E: that of MIN_BAND_COUNT real elements, not the lone one's
    per = error_model.steps_per_element(y, steps)
    assert np.all(per[y == 0] == steps[0][1])
    assert per[lone] == steps[0][1] and steps[0][1] > 100 * abs(eager[lone] - y[lone])
    assert np.all(np.abs(eager - y) <= per)  # eager within its own bound still


def test_a_reordered_gemm_passes_at_a_lone_small_element_of_a_relu_output():
    """The H200 false rejection of cudal1/h100/L2/P63: the reordered GEMM's ordinary error
    (6.7e-8) at the lone element of the lowest binade, where eager happened to be 2e-10 off.
    With the zeros counted, that element's band was the zeros and itself (E = 2e-10):
    ratio 84."""
    y, eager, lone, _ = relu_output()
    got = reordered(y)
    got[lone] = np.float32(y[lone] - 6.686e-8)
    glob = error_model.oracle_entry("f32", y, eager)
    band = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    assert cmp01(glob, got)["verdict"] == "pass"
    assert cmp01(band, got)["verdict"] == "pass", cmp01(band, got)["summary"]
    assert cmp01(band, eager)["verdict"] == "pass"


def test_a_relu_flipped_by_the_gemm_error_passes_at_a_zero():
    """A pre-activation within the GEMM's error of 0: eager's ReLU gives 0 (as y*), the
    candidate's a residue of that error's size. A zero's bound is the lowest band's."""
    y, eager, _, zero = relu_output()
    got = y.copy()
    got[zero] = 3e-8
    band = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    assert cmp01(band, got)["verdict"] == "pass", cmp01(band, got)["summary"]
    got[zero] = 1e-5  # two hundred times the GEMM's error: still a failure
    assert cmp01(band, got)["verdict"] == "fail"


def test_zeros_eager_gets_wrong_still_count_towards_the_lowest_band():
    """Only exact zeros carry no information: where eager errs at y* = 0 (cancellation), that
    error is the scale of the small elements and those zeros count."""
    y = np.concatenate([np.zeros(40), [1e-3], np.linspace(1, 1.9, 100)])
    eager = y.copy()
    eager[41:] += 1e-6
    residue = eager.copy()
    residue[:40] = 1e-9 * np.where(np.arange(40) % 2, 1, -1)
    steps = error_model.band_steps(y, residue, "f32")
    assert steps[0][0] == np.frexp(1e-3)[1] and steps[0][1] == pytest.approx(1e-9)
    steps = error_model.band_steps(y, eager, "f32")  # exact zeros: pooled up to 32 real ones
    assert steps[0][0] == 1 and steps[0][1] == pytest.approx(1e-6)


def test_an_output_of_exact_zeros_keeps_a_scale_of_zero():
    y = np.zeros(64)
    assert error_model.band_steps(y, y.copy(), "f32") == ((error_model.ZERO_EXPONENT, 0.0),)


def test_the_reverse_case_still_fails_on_a_relu_output():
    """The exact zeros leave the count, not the bound: a wide-range output with half its
    elements clamped to zero still shows a 1 % error on its small elements."""
    y, eager = wide_range()
    y, eager = np.maximum(y, 0), np.maximum(eager, 0)
    got = y.copy()
    small = (y != 0) & (y < 10)
    assert small.sum() > 50
    got[small] *= 1.01
    assert cmp01(error_model.oracle_entry("f32", y, eager), got)["verdict"] == "pass"
    res = cmp01(error_model.oracle_entry("f32", y, eager, error_scale="banded"), got)
    assert res["verdict"] == "fail" and 0 < y[res["worst_index"]] < 10


def test_the_reverse_case_passes_under_global_and_fails_under_banded():
    y, eager = wide_range()
    got = y.copy()
    small = np.abs(y) < 10
    assert small.sum() > 100
    got[small] *= 1.01  # 1 % off on the small elements only
    glob = error_model.oracle_entry("f32", y, eager)
    band = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    assert cmp01(glob, got)["verdict"] == "pass"  # the blind spot, kept visible here
    res = cmp01(band, got)
    assert res["verdict"] == "fail" and abs(y[res["worst_index"]]) < 10
    assert cmp01(band, eager)["verdict"] == "pass"  # eager itself is within its own bound


def test_the_judge_expands_tau_abs_steps_as_steps_per_element_does():
    y, eager = wide_range(n=512, seed=5)
    entry = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    tau = U * np.abs(y) + error_model.C_EAGER * error_model.steps_per_element(y, entry["scale"])
    for k in (0, 17, 300, int(np.argmin(np.abs(y)))):
        for factor, verdict in ((0.9, "pass"), (1.5, "fail")):
            got = y.copy()
            got[k] += factor * tau[k]
            # tau is several fp32 ulps (4 E >= 4 ulps at the band's top), so the candidate's
            # rounding to fp32 moves neither case across the bound
            assert cmp01(entry, got)["verdict"] == verdict, (k, factor)


def test_the_judge_and_steps_per_element_agree_on_every_kind_of_element():
    """Zeros (both signs), subnormals, magnitudes below the first step and above the last, and
    non-finite values: the C++ expansion of tau_abs_steps against steps_per_element, through
    the judge's verdict just inside and well outside each element's tau."""
    y, eager = wide_range(n=256, seed=11)
    entry = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    steps = entry["scale"]
    probe = np.array([0.0, -0.0, 1e-40, 2.0**-140, 2.0 ** (steps[0][0] - 5), 1e30, -3e38,
                      np.nan, np.inf])
    value = np.concatenate([y, probe])
    entry = error_model.oracle_entry("f32", value, None, big_e=steps, error_scale="banded")
    tau = U * np.abs(value) + error_model.C_EAGER * error_model.steps_per_element(value, steps)
    below, above = value.size - 5, value.size - 4  # under the first step, over the last
    assert tau[below] == error_model.C_EAGER * steps[0][1] + U * abs(value[below])
    assert tau[above] == error_model.C_EAGER * steps[-1][1] + U * abs(value[above])
    for k in range(y.size, value.size):
        if not np.isfinite(value[k]):
            continue
        for factor, verdict in ((0.5, "pass"), (3.0, "fail")):
            got = value.copy()
            got[k] += factor * tau[k]
            if not np.isfinite(np.float32(got[k])):
                continue  # beyond fp32's range: nothing to compare at this element
            assert cmp01(entry, got)["verdict"] == verdict, (value[k], factor)


def test_a_nan_probe_sharing_the_steps_gets_the_same_tau_elsewhere():
    y, eager = wide_range(n=256, seed=13)
    seed = error_model.oracle_entry("f32", y, eager, error_scale="banded")
    nan_value = y.copy()
    nan_value[0] = np.nan
    shared = error_model.oracle_entry("f32", nan_value, None, big_e=seed["scale"],
                                      error_scale="banded")
    assert shared["tau_abs_steps"] == seed["tau_abs_steps"] and shared["scale"] == seed["scale"]


def test_f64_outputs_near_the_top_of_the_range_do_not_overflow():
    y = np.array([1e308] * 40 + [1.0] * 40)
    steps = error_model.band_steps(y, y.copy(), "f64")
    assert steps[-1][0] == 1024 and np.isfinite(steps[-1][1])


def test_banded_keeps_what_global_accepts_and_rejects_on_a_matmul():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 256)), rng.standard_normal(256)
    exact = a @ b
    eager = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    band = error_model.oracle_entry("f32", exact, eager, error_scale="banded")
    reordered = (a.astype(np.float32)[:, ::-1] @ b.astype(np.float32)[::-1]).astype(np.float64)
    assert cmp01(band, reordered)["verdict"] == "pass"
    bf16 = lambda x: (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)  # noqa: E731
    assert cmp01(band, (bf16(a) @ bf16(b)).astype(np.float64))["verdict"] == "fail"


def test_a_profile_never_tightens_the_banded_scale():
    y, eager = wide_range(n=1024, seed=7)
    tf32 = (y * (1 + 2.0**-11 * np.random.default_rng(8).standard_normal(y.size)))
    strict = error_model.band_steps(y, eager, "f32")
    merged = error_model.oracle_entry("f32", y, eager, tf32, error_scale="banded")["scale"]
    assert np.all(error_model.steps_per_element(y, merged) >=
                  error_model.steps_per_element(y, strict))
    assert merged == error_model.merge_steps(strict, error_model.band_steps(y, tf32, "f32"))


def test_an_unknown_error_scale_is_refused():
    with pytest.raises(ValueError, match="error_scale"):
        error_model.oracle_entry("f32", np.ones(2), np.ones(2), error_scale="local")


def test_the_error_scale_is_read_back_from_a_generator_version():
    from kcv.audit.orchestrator import error_scale_of, generator_version

    for scale in error_model.ERROR_SCALES:
        assert error_scale_of(generator_version(scale)) == scale
        assert error_scale_of(generator_version(scale) + "; launcher of 4 processes") == scale


def test_a_store_judged_under_one_scale_refuses_the_other():
    from kcv.audit.orchestrator import AuditRefused, check_store_scale, generator_version

    class Judged:  # what check_store_scale reads of a kcv._core.Store
        def __init__(self, *scales):
            self.versions = [generator_version(s) for s in scales]

        def verdict_generators(self):
            return self.versions

    check_store_scale(Judged(), "banded")  # a fresh store takes either
    check_store_scale(Judged("global"), "global")
    with pytest.raises(AuditRefused, match="judged under the global error scale"):
        check_store_scale(Judged("global"), "banded")
    with pytest.raises(AuditRefused, match="banded"):
        check_store_scale(Judged("banded"), "global")


def test_eager_error_of_finite_arrays_is_the_masked_formulas_number():
    # eager_error's in-place steps give the bits of the plain formulas
    rng = np.random.default_rng(11)
    for n in (1, 7, 4096, 100_003):
        y = rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))
        for eager in ((y * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32), y + 1e-9):
            v, e = error_model._finite_pairs(y, eager)
            general = max(float(np.max(np.abs(e - v))),
                          error_model.unit_roundoff("f32") * float(np.sqrt(np.mean(np.square(v)))))
            assert error_model.eager_error(y, eager, "f32") == general
    y[3] = np.nan
    assert error_model.eager_error(y, y.astype(np.float32), "f32") > 0
