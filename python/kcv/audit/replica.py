"""A faithful replica of KernelBench's own correctness check, for the audit's differential.

What KernelBench's run_and_check_correctness does (research note verifier-anchors.md §0, read in
KernelBench's eval.py): torch.manual_seed(42); five trial seeds, each
torch.randint(0, 2**32 - 1, (1,)).item(); per trial set the seed, inputs = get_inputs(), run the
reference and the candidate on them, fail on a shape mismatch or on
not torch.allclose(output, output_new, atol=1e-2, rtol=1e-2) (the v0/v0.1 fp32 tolerances;
allclose has equal_nan=False, so any NaN fails). The reference runs in fp32 with PyTorch's
default backend flags (cuDNN may use TF32), as it does there.

Here the inputs are drawn and the reference run by the trusted reference worker (mode 1 and
mode 2 with PyTorch's default TF32 flags, error_model.PYTORCH_DEFAULT_TF32), the candidate runs in its worker with plain buffers (zero-filled,
as a fresh allocation is: the replica must not catch what KernelBench would not), and the
comparison happens in this trusted process. It measures what the one-shot check lets through;
it never decides a gate verdict."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kcv.audit.error_model import PYTORCH_DEFAULT_TF32

TRIALS = 5
FIRST_SEED = 42
ATOL = 1e-2
RTOL = 1e-2


@functools.lru_cache(maxsize=None)
def trial_seeds(trials: int = TRIALS, seed: int = FIRST_SEED) -> tuple[int, ...]:
    """KernelBench's per-trial seeds, drawn exactly as it draws them."""
    import torch

    gen_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return tuple(int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(trials))
    finally:
        torch.random.set_rng_state(gen_state)


@dataclass
class ReplicaResult:
    verdict: str  # "accepted" | "rejected"
    reason: str = ""
    trials_run: int = 0
    max_abs_diff: float = 0.0


def to_float(array: np.ndarray, dtype: str) -> np.ndarray:
    """An output as numbers: bf16 bit patterns widened exactly; others as they are."""
    a = np.asarray(array)
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def allclose_like_torch(reference: np.ndarray, candidate: np.ndarray, dtype: str,
                        atol: float = ATOL, rtol: float = RTOL) -> tuple[bool, str, float]:
    """torch.allclose(reference, candidate, atol, rtol) with equal_nan=False, in the output's
    precision: |ref - cand| <= atol + rtol * |cand|; equal infinities pass, any NaN fails."""
    work = np.float64 if dtype == "f64" else np.float32
    ref = np.asarray(reference).astype(work, copy=False)  # read only: no copy when already work
    cand = to_float(candidate, dtype).astype(work, copy=False)
    if ref.shape != cand.shape:
        return False, f"output shape mismatch: expected {ref.shape}, got {cand.shape}", float("inf")
    if np.isnan(ref).any() or np.isnan(cand).any():
        where = "candidate" if np.isnan(cand).any() else "reference"
        return False, f"NaN in the {where} output", float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        # in place where a step makes a new array (outputs can be gigabytes); the same roundings:
        # IEEE addition and multiplication commute. Explicit out= arrays: a 0-d output (a loss)
        # would otherwise come back as a numpy scalar, which cannot be an out= array.
        diff = np.subtract(ref, cand, out=np.empty(ref.shape, work))
        np.abs(diff, out=diff)
        same_inf = np.isinf(ref)
        same_inf &= ref == cand
        bound = np.abs(cand, out=np.empty(cand.shape, work))
        bound *= work(rtol)
        bound += work(atol)
        ok = np.less_equal(diff, bound)
        ok |= same_inf
        del bound
    finite = np.isfinite(diff)
    max_diff = float(diff[finite].max()) if finite.any() else 0.0
    if not ok.all():
        bad = int(np.argmax(~ok.ravel()))
        return (False, f"allclose fails at element {bad}: reference {ref.ravel()[bad]!r}, "
                f"candidate {cand.ravel()[bad]!r} ({int((~ok).sum())} elements)", max_diff)
    return True, "", max_diff


def run_replica(session, trials: int = TRIALS, seed: int = FIRST_SEED) -> ReplicaResult:
    """The five-trial check through the session's workers. Raises the session's
    ReferenceFailure / KernelTimeout when the trusted side cannot finish it."""
    max_diff = 0.0
    specs = session.problem.outputs
    for t, s in enumerate(trial_seeds(trials, seed)):
        inputs = session.inputs(s)
        reference = session.reference32(inputs, key=s, tf32=PYTORCH_DEFAULT_TF32)
        rec = session.run_candidate(inputs, plain_buffers=True)
        if rec.status != "ok":
            return ReplicaResult("rejected", f"trial {t + 1}: candidate {rec.status}: {rec.message}",
                                 t + 1, max_diff)
        for k, (ref, out) in enumerate(zip(reference, rec.take_outputs())):
            ok, why, diff = allclose_like_torch(ref, out, specs[k]["dtype"])
            max_diff = max(max_diff, diff) if np.isfinite(diff) else max_diff
            if not ok:
                return ReplicaResult("rejected", f"trial {t + 1}, output {k}: {why}", t + 1, max_diff)
    return ReplicaResult("accepted", "", trials, max_diff)
