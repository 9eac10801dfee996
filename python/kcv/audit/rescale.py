"""Other shapes of a KernelBench problem: which module-level constants to override, and to what.

KernelBench problems fix their sizes in module-level int constants (batch_size = 16, dim =
16384) that get_inputs and get_init_inputs read. Overriding one (the load field "constants")
and regenerating the inputs gives a second shape of the same problem; a candidate that hardcodes
the reference shape fails there while the reference works. The choice is read from the
reference source with `ast` (parsing executes nothing): the constants get_inputs uses, in source
order, batch-like names first. The new value is a small odd number different from the old one:
odd sizes break kernels that assume even or power-of-two extents, small ones keep the probe
cheap (choose).

A problem too large to judge at its own shape gets a reduced one (reduce, for kernel.py): the
same constants made smaller by the factor the bytes must shrink, batch-like names first, then
the sizes get_init_inputs does not read (so the weights keep their shape), then the rest. Each
new value keeps the power-of-two alignment of the old one (4096 -> 64, 393216 -> 256), so the
reduced shape stands in for the reference shape; misalignment is the second shape's job."""

from __future__ import annotations

import ast

BATCH_NAMES = ("batch_size", "batch", "bs", "B", "N", "n_batch", "num_batches")
SMALL_ODD = (3, 5, 7)


def _names_in_order(fn: ast.AST) -> list[str]:
    names = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    names.sort(key=lambda n: (n.lineno, n.col_offset))
    seen: list[str] = []
    for n in names:
        if n.id not in seen:
            seen.append(n.id)
    return seen


def function_names(reference_code: str, name: str) -> list[str] | None:
    """Names a module-level function reads, in source order; None when there is no such
    function to parse."""
    try:
        tree = ast.parse(reference_code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return _names_in_order(node)
    return None


def get_inputs_names(reference_code: str) -> list[str] | None:
    """Names get_inputs reads, in source order; None when there is no get_inputs to parse."""
    return function_names(reference_code, "get_inputs")


def module_int_constants(reference_code: str) -> dict:
    """Module-level `name = <int literal>` assignments, read without executing anything (so the
    rescaled pair can start before the reference worker has loaded)."""
    try:
        tree = ast.parse(reference_code)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            v = node.value.value
            if isinstance(v, int) and not isinstance(v, bool):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = v
    return out


def choose(reference_code: str, constants: dict | None = None) -> tuple[dict | None, str]:
    """({name: new value}, "") or (None, reason it is not applicable). constants: the module's
    int constants (default: read from the source)."""
    if constants is None:
        constants = module_int_constants(reference_code)
    ints = {k: v for k, v in (constants or {}).items()
            if isinstance(v, int) and not isinstance(v, bool)}
    if not ints:
        return None, "the reference has no module-level int constants to rescale"
    names = get_inputs_names(reference_code)
    if names is None:
        return None, "get_inputs could not be read from the reference source"
    used = [n for n in names if n in ints]
    if not used:
        return None, "get_inputs uses no module-level int constant (the shape is fixed)"
    batch = [n for n in used if n in BATCH_NAMES]
    name = (batch or used)[0]
    old = ints[name]
    new = next(v for v in SMALL_ODD if v != old)
    return {name: new}, ""


REDUCE_FLOOR = 16  # non-batch sizes stay at least this (a convolution's window must still fit)
# Names reduce() takes down to 1: batches only. BATCH_NAMES also holds N and B for choose(), but
# N is mostly a matrix dimension in KernelBench (a matmul's inner N of 1 is an outer product).
REDUCE_BATCH_NAMES = ("batch_size", "batch", "bs", "n_batch", "num_batches")


def _aligned_shrink(old: int, factor: float, floor: int) -> int:
    """old / factor, rounded down to a multiple of the power of two that divides old (capped by
    the largest power of two not above the result), never below floor."""
    target = old / factor
    step = min(old & -old, 1 << max(0, int(max(target, 1.0)).bit_length() - 1))
    return max(floor, int(target) // step * step)


def reduce(reference_code: str, constants: dict | None, factor: float,
           avoid=()) -> tuple[dict | None, str]:
    """({name: smaller value, ...}, "") shrinking the problem's bytes by about `factor` (> 1),
    assuming each size scales them linearly, or (None, why no constant can shrink). `avoid`:
    names not to touch (a shape the reference did not take). The assumption fails where a
    size does not reach the largest tensor (a matmul's inner dimension): the caller measures
    the result and reduces again from there."""
    if not factor > 1.05:  # NaN too
        return None, f"nothing to shrink: a factor of {factor:g}"
    ints = {k: v for k, v in (constants or {}).items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0 and k not in avoid}
    names = get_inputs_names(reference_code)
    if names is None:
        return None, "get_inputs could not be read from the reference source"
    used = [n for n in names if n in ints]
    if not used:
        return None, ("no size left that the reference takes smaller" if avoid else
                      "get_inputs uses no module-level int constant (the shape is fixed)")
    init = set(function_names(reference_code, "get_init_inputs") or ())
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
