"""CMP-01's second shape: which module-level constant to override, and to what.

KernelBench problems fix their sizes in module-level int constants (batch_size = 16, dim =
16384) that get_inputs and get_init_inputs read. Overriding one (the load field "constants")
and regenerating the inputs gives a second shape of the same problem; a candidate that hardcodes
the reference shape fails there while the reference works. The choice is read from the
reference source with `ast` (parsing executes nothing): the constants get_inputs uses, in source
order, batch-like names first. The new value is a small odd number different from the old one:
odd sizes break kernels that assume even or power-of-two extents, small ones keep the probe
cheap."""

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


def get_inputs_names(reference_code: str) -> list[str] | None:
    """Names get_inputs reads, in source order; None when there is no get_inputs to parse."""
    try:
        tree = ast.parse(reference_code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            return _names_in_order(node)
    return None


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
