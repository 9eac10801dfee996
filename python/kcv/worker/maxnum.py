"""maxNum semantics for the float64 reference (reference64 with `nan: "number"`; the mode is
kcv.worker.semantics.Semantics, whose docstring says what each op becomes and why).

Each replacement takes (the original op, its bound arguments) and computes the maxNum result
from PyTorch ops: where no NaN is involved it returns PyTorch's own result (ties, signed zeros
and index order included), so the replacement changes NaN handling and nothing else. number()
is the entry point; MINMAX_OPS lists every op it changes (facts.minmax reports whether a
forward ran one).
"""

import torch

from kcv.worker.opargs import bind
from kcv.worker.opargs import op as _op

_INF = float("inf")


def _floating(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.layout == torch.strided


def _bound(b, like: torch.Tensor) -> torch.Tensor:
    return b.to(like.dtype) if isinstance(b, torch.Tensor) else \
        torch.tensor(b, dtype=like.dtype, device=like.device)


# --- maxNum: pointwise ---------------------------------------------------------------------

def _maxnum_composition(x, lo, hi):
    """max(min(x, hi), lo) with maxNum's fmin/fmax: NaN only where every operand is NaN."""
    y = x
    if hi is not None:
        y = torch.fmin(y, _bound(hi, x))
    if lo is not None:
        y = torch.fmax(y, _bound(lo, x))
    return y


def _clamp_like(out, x, lo, hi):
    """PyTorch's result `out` where it is a number, the maxNum composition where it is NaN."""
    if not out.is_floating_point():
        return out
    return torch.where(torch.isnan(out), _maxnum_composition(x.to(out.dtype), lo, hi), out)


def _clamp(func, a):
    return _clamp_like(func(a["self"], a.get("min"), a.get("max")), a["self"], a.get("min"),
                       a.get("max"))


def _clamp_min(func, a):
    return _clamp_like(func(a["self"], a["min"]), a["self"], a["min"], None)


def _clamp_max(func, a):
    return _clamp_like(func(a["self"], a["max"]), a["self"], None, a["max"])


def _hardtanh(func, a):
    lo, hi = a["min_val"], a["max_val"]
    return _clamp_like(func(a["self"], lo, hi), a["self"], lo, hi)


def _relu(func, a):
    x, out = a["self"], func(a["self"])
    return out.masked_fill(torch.isnan(x), 0.0) if out.is_floating_point() else out


def _threshold(func, a):
    x, out = a["self"], func(a["self"], a["threshold"], a["value"])
    return out.masked_fill(torch.isnan(x), a["value"]) if out.is_floating_point() else out


def _fmax(func, a):
    return torch.fmax(a["self"], a["other"])


def _fmin(func, a):
    return torch.fmin(a["self"], a["other"])


# --- maxNum: reductions --------------------------------------------------------------------

def _has_nan(x) -> bool:
    return _floating(x) and x.numel() > 0 and bool(torch.isnan(x).any())


def _slice_extremum(x, dim: int, keepdim: bool, largest: bool):
    """(values, indices) of max/min over `dim` skipping NaNs; an all-NaN slice gives NaN at
    index 0; the index is the first element equal to the value (PyTorch's tie rule)."""
    nan = torch.isnan(x)
    filled = x.masked_fill(nan, -_INF if largest else _INF)
    values = (torch.amax if largest else torch.amin)(filled, dim, keepdim=True)
    all_nan = nan.all(dim, keepdim=True)
    values = values.masked_fill(all_nan, float("nan"))
    hit = (x == values) & ~nan
    indices = hit.to(torch.uint8).argmax(dim, keepdim=True)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


def _amax_like(largest: bool):
    def impl(func, a):
        x, dim, keepdim = a["self"], a.get("dim", []), a.get("keepdim", False)
        if not _has_nan(x):
            return func(x, dim, keepdim)
        nan = torch.isnan(x)
        filled = x.masked_fill(nan, -_INF if largest else _INF)
        values = func(filled, dim, keepdim)
        all_nan = nan.to(torch.uint8).amin(dim, keepdim).bool()
        return values.masked_fill(all_nan, float("nan"))
    return impl


def _max_dim_like(largest: bool):
    def impl(func, a):
        x, dim, keepdim = a["self"], a["dim"], a.get("keepdim", False)
        if not _has_nan(x) or x.dim() == 0:
            return func(x, dim, keepdim)
        return _slice_extremum(x, dim, keepdim, largest)
    return impl


def _max_all_like(largest: bool):
    def impl(func, a):
        x = a["self"]
        if not _has_nan(x):
            return func(x)
        return _slice_extremum(x.reshape(-1), 0, False, largest)[0]
    return impl


def _argmax_like(largest: bool):
    def impl(func, a):
        x, dim, keepdim = a["self"], a.get("dim"), a.get("keepdim", False)
        if not _has_nan(x):
            return func(x, dim, keepdim)
        if dim is None:
            index = _slice_extremum(x.reshape(-1), 0, False, largest)[1]
            return index.reshape([1] * x.dim()) if keepdim else index
        if x.dim() == 0:
            return func(x, dim, keepdim)
        return _slice_extremum(x, dim, keepdim, largest)[1]
    return impl


def _max_pool(func, a):
    """Pooling with indices: NaN read as -inf unless the whole window is NaN."""
    args = list(a.values())
    x = args[0]
    if not _has_nan(x):
        return func(*args)
    nan = torch.isnan(x)
    values, indices = func(x.masked_fill(nan, -_INF), *args[1:])
    marks = torch.zeros_like(x).masked_fill(nan, -_INF)  # a window of marks is -inf: all NaN
    all_nan = func(marks, *args[1:])[0] == -_INF
    return values.masked_fill(all_nan, float("nan")), indices


_NUMBER = {  # op -> impl(func, bound args)
    _op("maximum"): _fmax, _op("minimum"): _fmin,
    _op("max", "other"): _fmax, _op("min", "other"): _fmin,
    _op("clamp"): _clamp, _op("clamp", "Tensor"): _clamp,
    _op("clamp_min"): _clamp_min, _op("clamp_min", "Tensor"): _clamp_min,
    _op("clamp_max"): _clamp_max, _op("clamp_max", "Tensor"): _clamp_max,
    _op("hardtanh"): _hardtanh, _op("relu"): _relu, _op("threshold"): _threshold,
    _op("amax"): _amax_like(True), _op("amin"): _amax_like(False),
    _op("max", "dim"): _max_dim_like(True), _op("min", "dim"): _max_dim_like(False),
    _op("max"): _max_all_like(True), _op("min"): _max_all_like(False),
    _op("argmax"): _argmax_like(True), _op("argmin"): _argmax_like(False),
}
for _name in ("max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
              "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"):
    _NUMBER[_op(_name)] = _max_pool
# in-place forms: the functional op's values written into the tensor
_IN_PLACE = {_op(f"{name}_", overload): _op(name, overload)
             for name, overload in (("relu", "default"), ("clamp", "default"), ("clamp", "Tensor"),
                                    ("clamp_min", "default"), ("clamp_min", "Tensor"),
                                    ("clamp_max", "default"), ("clamp_max", "Tensor"),
                                    ("hardtanh", "default"), ("threshold", "default"))}
_NUMBER.pop(None, None)
_IN_PLACE = {k: v for k, v in _IN_PLACE.items() if k is not None and v in _NUMBER}
MINMAX_OPS = frozenset(_NUMBER) | frozenset(_IN_PLACE)  # the ops maxNum changes


def number(func, args, kwargs):
    """The maxNum result of one call of an op in MINMAX_OPS."""
    functional = _IN_PLACE.get(func)
    if functional is not None:
        target = args[0]
        target.copy_(_NUMBER[functional](functional, bind(functional, args, kwargs)))
        return target
    return _NUMBER[func](func, bind(func, args, kwargs))
