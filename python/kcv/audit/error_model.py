"""The audit's error model for opaque KernelBench modules: a bound tau per output element.

A KernelBench problem is an arbitrary PyTorch module, so the per-op formulas of the C++ oracle
(docs/01 §4) do not apply. Instead the bound is calibrated on the problem itself, on the very
inputs of the probe:

    tau_i = u_out * |y*_i|  +  c * E,      E = max( max_j |y32_j - y*_j| ,  u_out * RMS(y*) )

with y* the fp64 reference (reference worker, mode 0), y32 the eager fp32 result of the same
module on the same inputs (mode 2, TF32 off) and c = 4. E is what PyTorch eager fp32 itself gets
wrong on these inputs: a candidate passes when its error is within c times that. A reordering of
sums or a fused epilogue stays within c (the same c = 4 as the Higham-Mary bound of docs/01, which
leaves 1.4x over the worst measured reorder); a silent downcast to bf16, fp16 or TF32 keeps 8, 11
or 10 mantissa bits instead of 24 and costs 2^8 to 2^13 times E, so it fails. The floor
u_out * RMS(y*) keeps the bound meaningful when fp32 happens to be exact (copies, selections).
Why this shape and not a tolerance: docs/08_audit.md.

The scale depends on the profile. A profile is the semantics the kernel may assume, and TF32 is
part of some profiles' defaults: PyTorch eager runs cuDNN convolutions in TF32 by default
(torch.backends.cudnn.allow_tf32; matmul TF32 is off by default), and Triton's default dots are
TF32. So each profile names the TF32 flags of its own eager run (PROFILE_TF32), and its scale is
E_P = max(E_strict, E under P's flags): what that profile sanctions never tightens the bound,
and under strict the same TF32 error stays a silent downcast.

Integer and bool outputs are exact (tau = 0). Non-finite y* elements get tau = 0 (the judges
compare them by class); E is taken over the elements where both values are finite.

Banded scale (`error_scale="banded"`, opt-in): one E per output is blind on outputs of wide
dynamic range, where eager's worst absolute error sits on the largest elements and becomes the
bound of the smallest (docs/08_audit.md §3, the H200 reverse case). band_steps() gives E per
binade of |y*| instead: E(b) is eager's worst error among the elements of binade b and below,
the lowest binades pooled until they hold MIN_BAND_COUNT informative elements, and never below
one output ulp at the binade's top. It is non-decreasing in |y*|, so where eager's error is
absolute (cancellation: the same at every magnitude) the small binades already carry it and the
bound is about the global one; where it is relative, small elements get small bounds.

Zeros of y* join the lowest nonzero binade (a zero takes the first step's E), but a zero that
eager got exactly (y* = 0 and y32 = 0: what a ReLU, a mask or a clamp makes whatever the error
before it) says nothing about the error scale and does not count towards MIN_BAND_COUNT. Counting
them let a ReLU output's thousands of exact zeros fill the lowest band alone, whose E then rested
on the one or two real elements of its binade: on the H200, cudal1/h100/L2/P63 (Gemm, ReLU,
divide) at batch 3 had 759 exact zeros and one element (y* = 1.2e-4) in its lowest binade, eager
happened to be 2e-10 off there, and a reordered GEMM's ordinary 6.7e-8 (the global E is 3e-7)
failed CMP-01 at ratio 84 (docs/08_audit.md §3; bench/audit/banded_relu_zeros.py)."""

from __future__ import annotations

import math

import numpy as np

# Unit roundoff 2^-p of each output dtype (p = significand bits including the hidden one).
UNIT_ROUNDOFF = {
    "f64": 2.0**-53,
    "f32": 2.0**-24,
    "f16": 2.0**-11,
    "bf16": 2.0**-8,
}

# Multiple of eager fp32's own worst error a candidate may have (docs/08_audit.md §error model).
C_EAGER = 4.0

# The banded scale's smallest population: the lowest binades are pooled until they hold this many
# informative elements (all but the zeros eager got exactly), so no bound rests on one element
# where eager happened to be exact (the max of 32 draws of a symmetric error is about 2.5 of its
# sigma; a candidate's error beyond 4 times that has no realistic chance).
MIN_BAND_COUNT = 32
ERROR_SCALES = ("global", "banded")
# frexp exponent given to y* = 0: below every binade, so zeros pool into the lowest band.
ZERO_EXPONENT = -1100


# (cudnn_tf32, matmul_tf32) of each profile's eager fp32 run (worker mode 2's params).
STRICT_TF32 = (0, 0)
PYTORCH_DEFAULT_TF32 = (1, 0)  # PyTorch's own defaults: cuDNN TF32 on, matmul TF32 off
PROFILE_TF32 = {
    "strict": STRICT_TF32,
    "cuda-default": STRICT_TF32,
    "fast-math": STRICT_TF32,
    "pytorch-eager": PYTORCH_DEFAULT_TF32,
    "triton-default": (1, 1),  # tl.dot's default input precision is TF32
}


def tf32_flags(profile: str) -> tuple[int, int]:
    """(cudnn_tf32, matmul_tf32) of a profile's eager fp32 run."""
    try:
        return PROFILE_TF32[profile]
    except KeyError:
        raise ValueError(f"profile: unknown profile {profile!r}; known: "
                         f"{', '.join(PROFILE_TF32)}") from None


def extra_flag_sets(profiles) -> list[tuple[int, int]]:
    """The TF32 flag sets other than strict's that these profiles need an eager run for."""
    out = []
    for p in profiles:
        f = tf32_flags(p)
        if f != STRICT_TF32 and f not in out:
            out.append(f)
    return out


def unit_roundoff(dtype: str) -> float:
    """u of a floating dtype name; 0 for integer and bool dtypes (exact outputs)."""
    return UNIT_ROUNDOFF.get(dtype, 0.0)


def _finite_pairs(value: np.ndarray, eager: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y* and y32 as flat f64 arrays, at the elements finite in both."""
    v = np.asarray(value, dtype=np.float64).ravel()
    e = np.asarray(eager, dtype=np.float64).ravel()
    if v.shape != e.shape:
        raise ValueError(f"eager value has {e.size} elements, the fp64 value {v.size}")
    finite = np.isfinite(v) & np.isfinite(e)
    if finite.all():  # the usual case: no gathered copies of gigabyte outputs
        return v, e
    return v[finite], e[finite]


def eager_error(value: np.ndarray, eager: np.ndarray, dtype: str) -> float:
    """E: the worst |y32 - y*| over elements finite in both, floored at u_out * RMS(y*)."""
    v, e = _finite_pairs(value, eager)
    if v.size == 0:
        return 0.0
    scratch = np.subtract(e, v)  # one array for the differences, then the squares
    worst = float(np.max(np.abs(scratch, out=scratch)))
    rms = float(np.sqrt(np.mean(np.square(v, out=scratch))))
    return max(worst, unit_roundoff(dtype) * rms)


def scale(value: np.ndarray, eager: np.ndarray | None, dtype: str,
          eager_profile: np.ndarray | None = None) -> float:
    """E_P: the eager error (0 without an eager run), the larger of the flags-off run's and the
    profile's TF32 run's when that is given."""
    big_e = 0.0 if eager is None else eager_error(value, eager, dtype)
    if eager_profile is not None:
        big_e = max(big_e, eager_error(value, eager_profile, dtype))
    return big_e


def tau_from_scale(value: np.ndarray, dtype: str, big_e: float, c: float = C_EAGER) -> np.ndarray:
    """tau = u_out |y*| + c E per element; 0 for exact dtypes and non-finite y*."""
    v = np.asarray(value, dtype=np.float64)
    u = unit_roundoff(dtype)
    if u == 0.0:
        return np.zeros_like(v)
    t = u * np.abs(v) + c * big_e
    t[~np.isfinite(v)] = 0.0
    return t


def tau(value: np.ndarray, eager: np.ndarray | None, dtype: str, c: float = C_EAGER,
        eager_profile: np.ndarray | None = None) -> np.ndarray:
    """tau per element (same shape as value). eager None: only the final rounding u|y*|.
    eager_profile: the eager run under the profile's TF32 flags; E = max of the two E's."""
    return tau_from_scale(value, dtype, scale(value, eager, dtype, eager_profile), c)


def band_steps(value: np.ndarray, eager: np.ndarray, dtype: str) -> tuple:
    """The banded scale: ((e_1, E_1), ..., (e_k, E_k)), exponents and E both increasing; an
    element with frexp exponent e (|y*| in [2^(e-1), 2^e); ZERO_EXPONENT for 0) takes the E of
    the first step with e_j >= e, and the last step's E above it. Empty when no element is finite
    in both (then the scale is 0)."""
    u = unit_roundoff(dtype)
    v, e = _finite_pairs(value, eager)
    if v.size == 0:
        return ()
    a = np.abs(v)
    err = np.abs(e - v)
    exps = np.frexp(a)[1].astype(np.int16)
    zero = a == 0
    # Zeros join the lowest nonzero binade rather than form a band of their own: an exact zero
    # where eager is exact too must not leave a candidate's harmless residue a bound of 0.
    exps[zero] = exps[~zero].min() if not zero.all() else ZERO_EXPONENT
    # ... but such a zero (y* = 0 and y32 = 0: a ReLU's, a mask's) carries no information about
    # the error scale, so it does not count towards MIN_BAND_COUNT: otherwise a ReLU's exact
    # zeros fill the lowest band and its E rests on the one real element beside them.
    informative = ~(zero & (e == 0))
    order = np.argsort(exps, kind="stable")  # a radix sort for int16
    sorted_exps, sorted_err = exps[order], err[order]
    starts = np.flatnonzero(np.r_[True, sorted_exps[1:] != sorted_exps[:-1]])
    band_exp = sorted_exps[starts].astype(np.int64)
    cum_max = np.maximum.accumulate(np.maximum.reduceat(sorted_err, starts))
    cum_count = np.cumsum(np.add.reduceat(informative[order].astype(np.int64), starts))
    pooled = int(min(np.searchsorted(cum_count, MIN_BAND_COUNT), band_exp.size - 1))
    steps: list[tuple[int, float]] = []
    for k in range(pooled, band_exp.size):
        top = int(band_exp[k])
        floor = math.ldexp(u, top) if top > ZERO_EXPONENT else 0.0  # one output ulp at the top
        big_e = max(float(cum_max[k]), floor, steps[-1][1] if steps else 0.0)
        if steps and steps[-1][1] == big_e:
            steps[-1] = (top, big_e)  # same E: one step reaching higher
        else:
            steps.append((top, big_e))
    return tuple(steps)


def merge_steps(a: tuple, b: tuple) -> tuple:
    """The larger of two banded scales at every exponent (a profile's scale never tightens
    strict's), as steps."""
    if not a or not b:
        return a or b
    exps = sorted({e for e, _ in a} | {e for e, _ in b})
    out: list[tuple[int, float]] = []
    for x in exps:
        big_e = max(step_value(a, x), step_value(b, x))
        if out and out[-1][1] == big_e:
            out[-1] = (x, big_e)
        else:
            out.append((x, big_e))
    return tuple(out)


def step_value(steps: tuple, exponent: int) -> float:
    """E of the binade with this frexp exponent."""
    for e, big_e in steps:
        if exponent <= e:
            return big_e
    return steps[-1][1] if steps else 0.0


def steps_per_element(value: np.ndarray, steps: tuple) -> np.ndarray:
    """E per element of `value` under a banded scale: what the C++ judge computes from
    tau_abs_steps (the tests compare the two)."""
    v = np.asarray(value, dtype=np.float64)
    if not steps:
        return np.zeros_like(v)
    exps = np.frexp(np.abs(v))[1]
    exps = np.where(v == 0, ZERO_EXPONENT, exps)
    tops = np.array([e for e, _ in steps])
    vals = np.array([x for _, x in steps])
    idx = np.minimum(np.searchsorted(tops, exps, side="left"), tops.size - 1)
    return vals[idx]


def oracle_entry(dtype: str, value: np.ndarray, eager: np.ndarray | None,
                 eager_profile: np.ndarray | None = None, big_e=None,
                 error_scale: str = "global") -> dict:
    """One output's oracle dict as kcv._core.judge takes it: value, tau and the declared
    (eager fp32) value, which PRC-01 compares the candidate's error against: the run under the
    profile's TF32 flags when given, since that is what the profile declares eager to be.
    big_e: the scale to use instead of measuring it from these eager runs (a probe that shares
    another's calibration: that entry's "scale"); "scale" in the entry records the scale used
    (the judge ignores it: equal scales mean equal tau). tau itself travels as tau_rel, tau_abs
    (see tau_from_scale), which kcv._core.judge expands per element; under
    error_scale="banded" the scale is band_steps()'s and tau_abs_steps replaces tau_abs there."""
    if error_scale not in ERROR_SCALES:
        raise ValueError(f"error_scale: {error_scale!r} is not one of {', '.join(ERROR_SCALES)}")
    v = np.ascontiguousarray(value, dtype=np.float64)
    declared = eager_profile if eager_profile is not None else eager
    u = unit_roundoff(dtype)
    if error_scale == "banded":
        if big_e is not None:
            steps = tuple(big_e)
        else:
            steps = () if eager is None else band_steps(v, eager, dtype)
            if eager_profile is not None:
                steps = merge_steps(steps, band_steps(v, eager_profile, dtype))
        return {
            "dtype": dtype,
            "shape": tuple(int(s) for s in v.shape),
            "value": v,
            "tau_rel": u,
            "tau_abs": C_EAGER * steps[-1][1] if (u and steps) else 0.0,
            "tau_abs_steps": [(e, C_EAGER * x if u else 0.0) for e, x in steps],
            "scale": steps,
            "declared": None if declared is None else np.asarray(declared),
        }
    e = scale(v, eager, dtype, eager_profile) if big_e is None else float(big_e)
    return {
        "dtype": dtype,
        "shape": tuple(int(s) for s in v.shape),
        "value": v,
        # tau_from_scale's formula, evaluated by the judge: no tau array per probe held here
        "tau_rel": u,
        "tau_abs": C_EAGER * e if u else 0.0,
        "scale": e,
        # as it came (f32 from the eager run): the judge reads it as f64 itself
        "declared": None if declared is None else np.asarray(declared),
    }
