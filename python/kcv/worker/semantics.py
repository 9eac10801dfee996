"""The float64 reference under a profile's NaN and subnormal semantics (reference64's `nan` and
`subnormals`, docs/06_worker_protocol.md §7.3; the semantics are docs/01 §2-3).

PyTorch's own semantics are `nan: "propagate"` (IEEE 2019 maximum/minimum: a NaN operand gives
NaN) and `subnormals: "keep"`. A CUDA kernel built with fmaxf, or Triton's maxnumf, implements
maxNum instead, and fast-math flushes subnormals; the oracle must run the reference the way the
declared profile computes, or a conforming kernel looks wrong. Semantics() is a
TorchDispatchMode, active only during the float64 forward, that changes this at the aten level,
so it applies to whatever Python or module code the reference is written in:

- nan="number" (maxNum): maximum/minimum (and max/min of two tensors) become fmax/fmin;
  clamp/clamp_min/clamp_max/hardtanh (relu6 reaches aten as hardtanh) take the maxNum
  composition max(min(x, hi), lo) wherever PyTorch's result is NaN, so a NaN x becomes the upper
  bound when there is one (docs/01's "clamp(NaN) = upper bound"), the lower bound otherwise;
  relu(NaN) = 0 and threshold(NaN) = its value; the reductions amax/amin/max/min (all
  elements, or max.dim/min.dim with their indices) and argmax/argmin skip NaNs unless the
  whole reduced slice is NaN (then NaN, index 0); max pooling (max_pool1d/2d/3d_with_indices,
  adaptive_max_pool1d/2d/3d) reads NaN as -inf unless the whole window is NaN. Where no NaN is
  involved the result is PyTorch's own, bit for bit (ties, signed zeros, index order). In-place
  forms (relu_, clamp_, hardtanh_, threshold_, ...) write the same values into their tensor.
- subnormals="flush": every floating tensor argument of every op, and every result, with
  0 < |x| < 2^-126 is read and written as a zero of its sign: fp32 FTZ/DAZ emulated at op
  granularity on float64 values (an op's internal partial results are not flushed). View ops
  (no computation) are left alone, an op's inputs are flushed into copies (the caller's tensors
  keep their values), and the tensors an in-place or out= op writes are flushed in place
  before and after it.

Ops beyond these (sort, topk, cummax, median...) keep PyTorch's NaN behaviour. The maxNum
replacements live in kcv.worker.maxnum; this file holds the mode and the flush.
"""

import contextlib
import functools

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from kcv.worker import maxnum

FLUSH_BELOW = 2.0 ** -126  # the smallest normal float32


def _floating(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.layout == torch.strided


def _tiny(t: torch.Tensor) -> torch.Tensor:
    return (t.abs() < FLUSH_BELOW) & (t != 0)


def flushed(t):
    """`t` with its subnormal-range values made zeros of their sign (a new tensor); anything
    but a strided floating tensor unchanged."""
    if not _floating(t) or t.numel() == 0:
        return t
    return torch.where(_tiny(t), t * 0.0, t)


def flush_(t) -> None:
    """flushed() in place."""
    if _floating(t) and t.numel() > 0 and t.device.type != "meta":
        # unconditional: asking whether any value is tiny would synchronize a GPU every op
        t.copy_(torch.where(_tiny(t), t * 0.0, t))


@functools.lru_cache(maxsize=None)
def _aliasing(func) -> tuple:
    """(names of the arguments the op writes, whether a result aliases an argument)."""
    schema = func._schema
    written = frozenset(a.name for a in schema.arguments
                        if a.alias_info is not None and a.alias_info.is_write)
    return written, any(r.alias_info is not None for r in schema.returns)


def _each_tensor(value, fn) -> None:
    tree_map(lambda v: fn(v) if isinstance(v, torch.Tensor) else v, value)


class Semantics(TorchDispatchMode):
    """The dispatch mode of the module docstring; `nan` "propagate"|"number", `subnormals`
    "keep"|"flush". Use active(nan, subnormals), which enters nothing for PyTorch's own."""

    def __init__(self, nan: str, subnormals: str):
        super().__init__()
        self.number = nan == "number"
        self.flush = subnormals == "flush"

    def _call(self, func, args, kwargs):
        if self.number and func in maxnum.MINMAX_OPS:
            return maxnum.number(func, args, kwargs)
        return func(*args, **kwargs)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.flush:
            return self._call(func, args, kwargs)
        written, aliased = _aliasing(func)
        if aliased and not written:  # a view: nothing is computed
            return func(*args, **kwargs)
        names = [a.name for a in func._schema.arguments]
        args = list(args)
        for k, value in enumerate(args):
            if k < len(names) and names[k] in written:
                _each_tensor(value, flush_)
            else:
                args[k] = tree_map(flushed, value)
        kwargs = {n: (v if n in written else tree_map(flushed, v)) for n, v in kwargs.items()}
        _each_tensor([kwargs[n] for n in written if n in kwargs], flush_)
        result = self._call(func, tuple(args), kwargs)
        _each_tensor(result, flush_)  # fresh results, or the written arguments themselves
        return result


def active(nan: str, subnormals: str):
    """The context for a forward under these semantics (a no-op for PyTorch's own)."""
    if nan == "propagate" and subnormals == "keep":
        return contextlib.nullcontext()
    return Semantics(nan, subnormals)
