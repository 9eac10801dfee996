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

Integer and bool outputs are exact (tau = 0). Non-finite y* elements get tau = 0 (the judges
compare them by class); E is taken over the elements where both values are finite."""

from __future__ import annotations

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


def unit_roundoff(dtype: str) -> float:
    """u of a floating dtype name; 0 for integer and bool dtypes (exact outputs)."""
    return UNIT_ROUNDOFF.get(dtype, 0.0)


def eager_error(value: np.ndarray, eager: np.ndarray, dtype: str) -> float:
    """E: the worst |y32 - y*| over elements finite in both, floored at u_out * RMS(y*)."""
    u = unit_roundoff(dtype)
    v = np.asarray(value, dtype=np.float64).ravel()
    e = np.asarray(eager, dtype=np.float64).ravel()
    if v.shape != e.shape:
        raise ValueError(f"eager value has {e.size} elements, the fp64 value {v.size}")
    finite = np.isfinite(v) & np.isfinite(e)
    if not finite.any():
        return 0.0
    worst = float(np.max(np.abs(e[finite] - v[finite])))
    rms = float(np.sqrt(np.mean(np.square(v[finite]))))
    return max(worst, u * rms)


def tau(value: np.ndarray, eager: np.ndarray | None, dtype: str, c: float = C_EAGER) -> np.ndarray:
    """tau per element (same shape as value). eager None: only the final rounding u|y*|."""
    v = np.asarray(value, dtype=np.float64)
    u = unit_roundoff(dtype)
    if u == 0.0:
        return np.zeros_like(v)
    big_e = 0.0 if eager is None else eager_error(v, eager, dtype)
    t = u * np.abs(v) + c * big_e
    t[~np.isfinite(v)] = 0.0
    return t


def oracle_entry(dtype: str, value: np.ndarray, eager: np.ndarray | None) -> dict:
    """One output's oracle dict as kcv._core.judge takes it: value, tau and the declared
    (eager fp32) value, which PRC-01 compares the candidate's error against."""
    v = np.ascontiguousarray(value, dtype=np.float64)
    return {
        "dtype": dtype,
        "shape": tuple(int(s) for s in v.shape),
        "value": v,
        "tau": tau(v, eager, dtype),
        "declared": None if eager is None else np.ascontiguousarray(eager, dtype=np.float64),
    }
