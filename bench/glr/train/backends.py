"""Which code runs the recurrence of fla's layers: the three backends of the training recipe.

  kcv        `import kcv.glr.fla`: fla dispatches its ops to kcv (CUDA: kcv's sm_90a kernels;
             CPU: kcv's fp64 reference). kcv's verifier may decline a call, and fla would then run
             its own kernel without a word; the run counts the calls kcv serves and fails when one
             op call was not served by kcv.
  fla        fla's own Triton kernels (CUDA only), with kcv's backend not loaded.
  reference  the fp32 PyTorch recurrences of reference.py, bound in place of the op names in
             fla's layer modules (the fused_recurrent names raise).

Every backend counts the chunk-op calls of fla's layers, so a run's summary says how many
recurrence calls it made and (kcv) how many kcv served."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

import torch

from . import reference
from .model import FAMILIES

NAMES = ("kcv", "fla", "reference")


class Calls:
    """Chunk-op calls made by the layers, and those kcv's backend served."""

    def __init__(self):
        self.op = 0
        self.kcv = 0
        self.fla_guard = None  # fla backend: "inactive" or "lifted" (fla_hopper_guard)


def _wrap(fn, counter, attr):
    def counted(*args, **kwargs):
        setattr(counter, attr, getattr(counter, attr) + 1)
        return fn(*args, **kwargs)

    counted.__wrapped__ = fn
    return counted


def _layer_module(family):
    return importlib.import_module(FAMILIES[family][0])


def _chunk_op_name(module):
    names = [n for n in reference.OPS if n.startswith("chunk_") and hasattr(module, n)]
    if len(names) != 1:
        raise RuntimeError(f"{module.__name__}: expected one chunk op, found {names}")
    return names[0]


def fla_hopper_guard(lift):
    """fla 0.6 refuses its gated backward on Hopper with Triton >= 3.4 and < 3.7.1 (a known
    Triton miscompile, fla issue #640): `fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1` is False
    there. Returns "inactive" when the guard does not apply, "lifted" when `lift` set the flag
    (the run then uses the path fla refuses; its log says so; `bound` clears it again on exit),
    and raises otherwise."""
    import fla.ops.common.chunk_o as chunk_o
    if chunk_o.TRITON_ABOVE_3_7_1:
        return "inactive"
    if not lift:
        import triton
        raise RuntimeError(f"backend fla: fla refuses its gated backward on this GPU with Triton "
                           f"{triton.__version__} (needs >= 3.7.1, fla issue #640); install a "
                           "newer Triton, or pass --lift-fla-guard to run the refused path")
    chunk_o.TRITON_ABOVE_3_7_1 = True
    return "lifted"


@contextlib.contextmanager
def bound(name, family, device, lift_fla_guard=False):
    """Binds backend `name` for `family`'s layer on `device` for the duration of the `with`
    block, which gets the Calls counter; the layer module's names are restored afterwards (kcv's
    backend, once imported, stays registered with fla for the process). lift_fla_guard: see
    fla_hopper_guard (the fla backend only); the counter's `fla_guard` says what was done."""
    if name not in NAMES:
        raise ValueError(f"backend: expected one of {', '.join(NAMES)}, got {name!r}")
    if name == "kcv":  # first: importing it rebinds the op names in fla's loaded modules
        import kcv.glr
        import kcv.glr.fla as kcv_fla
    module = _layer_module(family)
    op = _chunk_op_name(module)
    saved = {attr: getattr(module, attr) for attr in reference.OPS if hasattr(module, attr)}
    calls, restore = Calls(), []
    if name == "kcv":
        if os.environ.get("FLA_DISABLE_BACKEND_DISPATCH") == "1":
            raise RuntimeError("backend kcv: FLA_DISABLE_BACKEND_DISPATCH=1 bypasses every fla "
                               "backend, kcv's included; unset it")
        if device.type == "cuda" and not kcv.glr.has_cuda():
            raise RuntimeError("backend kcv: kcv._glr was built without the CUDA kernels")
        served = kcv_fla.KcvBackend.__dict__[op]
        setattr(kcv_fla.KcvBackend, op, _wrap(served, calls, "kcv"))
        restore.append(lambda: setattr(kcv_fla.KcvBackend, op, served))
        # kcv.glr.fla bound fla's dispatching wrapper to the op's name in the layer module.
        setattr(module, op, _wrap(saved[op], calls, "op"))
    elif name == "fla":
        if device.type != "cuda":
            raise RuntimeError("backend fla: fla's Triton kernels need a CUDA device")
        if "kcv.glr.fla" in sys.modules:
            raise RuntimeError("backend fla: kcv's fla backend is loaded in this process")
        calls.fla_guard = fla_hopper_guard(lift_fla_guard)
        if calls.fla_guard == "lifted":
            import fla.ops.common.chunk_o as chunk_o
            restore.append(lambda: setattr(chunk_o, "TRITON_ABOVE_3_7_1", False))
        setattr(module, op, _wrap(saved[op], calls, "op"))
    else:
        for attr in saved:
            setattr(module, attr, reference.OPS[attr])
        setattr(module, op, _wrap(reference.OPS[op], calls, "op"))
    try:
        yield calls
    finally:
        for attr, fn in saved.items():
            setattr(module, attr, fn)
        for undo in restore:
            undo()


def check_served(name, calls):
    """Raises when a kcv run had op calls that kcv did not serve (fla ran them instead)."""
    if name == "kcv" and calls.kcv != calls.op:
        raise RuntimeError(f"backend kcv: kcv served {calls.kcv} of {calls.op} recurrence calls; "
                           "its verifier declined the others (see kcv.glr.fla.decline_reason)")


def autocast(device):
    """bfloat16 autocast on CUDA (kcv's chunk kernels take bfloat16 q/k/v), none on the CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" \
        else torch.autocast("cpu", enabled=False)
