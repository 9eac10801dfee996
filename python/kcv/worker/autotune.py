"""The Triton objects of a candidate module: its autotuners (load reply `autotuners`, the run
task's `autotune_config`) and its kernels (describe's device code), docs/06 §7.4.

Only the module's globals are searched (where @triton.autotune / @triton.jit put them); each
global's wrapper chain is followed through `.fn` (an Autotuner around a Heuristics around a
JITFunction, or the other way round), so a kernel is found whatever decorators it has. Triton
is never imported here: a candidate that did not import it has no Triton objects.

only_config(k) makes every autotuner run its config min(k, n-1) alone by giving it a one-entry
`configs` list for the forward (Triton's Autotuner.run skips tuning and its cache when it has
one config) and putting the list back after, so tuning results cached by earlier calls neither
leak into nor survive the forced run.
"""

import contextlib
import sys


def _triton_classes():
    if "triton" not in sys.modules:
        return None
    try:
        from triton.runtime.autotuner import Autotuner  # noqa: PLC0415
        from triton.runtime.jit import KernelInterface  # noqa: PLC0415
    except Exception:  # noqa: BLE001 (a broken or partial Triton: no Triton objects then)
        return None
    return Autotuner, KernelInterface


def _chain(obj, interface) -> list:
    """`obj` and the objects it wraps through `.fn`, while they are Triton kernel objects."""
    out, seen = [], set()
    while isinstance(obj, interface) and id(obj) not in seen:
        seen.add(id(obj))
        out.append(obj)
        obj = getattr(obj, "fn", None)
    return out


def triton_objects(namespace: dict) -> list:
    """[(global name, object)] for every Triton kernel object reachable from a global."""
    classes = _triton_classes()
    if classes is None:
        return []
    out, seen = [], set()
    for name, value in list(namespace.items()):
        for obj in _chain(value, classes[1]):
            if id(obj) not in seen:
                seen.add(id(obj))
                out.append((name, obj))
    return out


def find_autotuners(namespace: dict) -> list:
    """[(global name, Autotuner)] among the module's globals, in definition order."""
    classes = _triton_classes()
    if classes is None:
        return []
    return [(name, obj) for name, obj in triton_objects(namespace) if isinstance(obj, classes[0])]


def _config(config) -> dict:
    out = {"kwargs": dict(getattr(config, "kwargs", {}) or {})}
    for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        value = getattr(config, key, None)
        if value is not None:
            out[key] = value
    return out


def describe(autotuners: list) -> list:
    """The load reply's `autotuners`: [{"name", "configs": [{"kwargs", "num_warps", ...}]}]."""
    return [{"name": name, "configs": [_config(c) for c in at.configs]} for name, at in autotuners]


@contextlib.contextmanager
def only_config(autotuners: list, k: int):
    """Every autotuner runs only configs[min(k, n-1)] inside the block; k < 0: untouched."""
    if k < 0 or not autotuners:
        yield
        return
    saved = [(at, at.configs) for _, at in autotuners]
    try:
        for at, configs in saved:
            if configs:
                at.configs = [configs[min(k, len(configs) - 1)]]
        yield
    finally:
        for at, configs in saved:
            at.configs = configs
