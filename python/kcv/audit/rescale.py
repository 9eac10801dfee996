"""A reduced shape for a problem too large to judge at its own (kernel.py, reduced.py).

KernelBench problems fix their sizes in module-level int constants (batch_size = 16, dim =
16384) that get_inputs and get_init_inputs read; the reference worker's facts say which reads
which (docs/06 §7.2). reduce() makes the constants get_inputs reads smaller by the factor the
bytes must shrink: batch-like names first, then the sizes get_init_inputs does not read (so the
weights keep their shape), then the rest. Each new value keeps the power-of-two alignment of the
old one (4096 -> 64, 393216 -> 256), so the reduced shape stands in for the reference shape. The
shapes the gates probe beyond it are kcv's plans (src/kernelbench), not this module's."""

from __future__ import annotations

REDUCE_FLOOR = 16  # non-batch sizes stay at least this (a convolution's window must still fit)
# Names reduce() takes down to 1: batches only (N and B are mostly matrix dimensions here).
REDUCE_BATCH_NAMES = ("batch_size", "batch", "bs", "n_batch", "num_batches")


def _aligned_shrink(old: int, factor: float, floor: int) -> int:
    """old / factor, rounded down to a multiple of the power of two that divides old (capped by
    the largest power of two not above the result), never below floor."""
    target = old / factor
    step = min(old & -old, 1 << max(0, int(max(target, 1.0)).bit_length() - 1))
    return max(floor, int(target) // step * step)


def reduce(constants: dict, in_get_inputs: list, in_init: list, factor: float,
           avoid=()) -> tuple[dict | None, str]:
    """({name: smaller value, ...}, "") shrinking the problem's bytes by about `factor` (> 1),
    assuming each size scales them linearly, or (None, why no constant can shrink). `avoid`:
    names not to touch (a shape the reference did not take). The assumption fails where a size
    does not reach the largest tensor (a matmul's inner dimension): the caller measures the
    result and reduces again from there."""
    if not factor > 1.05:  # NaN too
        return None, f"nothing to shrink: a factor of {factor:g}"
    ints = {k: v for k, v in (constants or {}).items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0 and k not in avoid}
    used = [n for n in in_get_inputs if n in ints]
    if not used:
        return None, ("no size left that the reference takes smaller" if avoid else
                      "get_inputs reads no module-level int constant (the shape is fixed)")
    init = set(in_init)
    batch = [n for n in used if n in REDUCE_BATCH_NAMES]
    free = [n for n in used if n not in REDUCE_BATCH_NAMES and n not in init]
    rest = [n for n in used if n not in REDUCE_BATCH_NAMES and n in init]
    override: dict = {}
    left = float(factor)
    for name in batch + free + rest:
        if left <= 1.05:
            break
        old = ints[name]
        new = _aligned_shrink(old, left,
                              1 if name in REDUCE_BATCH_NAMES else min(old, REDUCE_FLOOR))
        if new < old:
            override[name] = new
            left *= new / old
    if not override:
        return None, "every size get_inputs reads is already at its floor"
    return override, ""
