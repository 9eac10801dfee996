"""Poisoned empty tensors for a candidate's run (the run task's `poison`, docs/06 §7.3).

kcv's unwritten-element audit finds output elements still holding the call's sentinel. A
candidate that returns `torch.empty_like(x)` and writes only part of it returns whatever the
allocator's memory held, which is often a previous call's right answer, so the audit would see
no sentinel. Poison() is a TorchDispatchMode that fills every tensor an empty factory makes
(aten.empty.memory_format, empty_strided, empty_like, new_empty, new_empty_strided) with the
bit pattern kcv gives for its dtype, whether the factory was called from Python or from C++
extension code (both go through the dispatcher). The fill goes through a same-width integer view
of the whole storage, so a float pattern is written bit for bit (a NaN payload survives) and
padding of a strided allocation is filled too. Dtypes without a pattern (bool, uint8, float8,
complex...) are left as they are.

The mode is thread-local, as all dispatch modes are: a run with concurrency on CPU threads
enters one per thread (kcv.worker.candidate).
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
FACTORIES = frozenset(f for f in (
    aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default,
    aten.new_empty.default, aten.new_empty_strided.default) if f is not None)
# protocol dtype name -> (torch dtype, the integer dtype of its width)
_VIEWS = {"f32": (torch.float32, torch.int32), "f64": (torch.float64, torch.int64),
          "f16": (torch.float16, torch.int16), "bf16": (torch.bfloat16, torch.int16),
          "i32": (torch.int32, torch.int32), "i64": (torch.int64, torch.int64)}


def _signed(bits: int, width: int) -> int:
    """The unsigned pattern as the signed integer of the same bits (what fill_ takes)."""
    return bits - (1 << width) if bits >= 1 << (width - 1) else bits


def patterns(poison: dict) -> dict:
    """torch dtype -> (integer view dtype, signed fill value) for a task's poison object."""
    out = {}
    for name, bits in poison.items():
        dtype, view = _VIEWS[name]
        out[dtype] = (view, _signed(bits, torch.iinfo(view).bits))
    return out


def fill(t: torch.Tensor, table: dict) -> None:
    """Fills the whole storage of `t` (a fresh allocation) with its dtype's pattern, if any."""
    entry = table.get(t.dtype)
    if entry is None or t.device.type == "meta":
        return
    view, value = entry
    n = t.untyped_storage().nbytes() // t.element_size()
    if n:
        flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,))
        flat.view(view).fill_(value)


class Poison(TorchDispatchMode):
    """Fills what empty factories make (module docstring); `poison` is the task's object."""

    def __init__(self, poison: dict):
        super().__init__()
        self.table = patterns(poison)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in FACTORIES and isinstance(result, torch.Tensor):
            fill(result, self.table)
        return result
