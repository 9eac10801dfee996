"""Which aten ops reduce, of what kind, and over how many terms (facts.reductions, docs/06 §7.2).

`terms(func, args)` gives the (kind, length) pairs one call of an aten op contributes: `length`
is the number of terms that make one output element (a sum over dims 1 and 2 of a [4, 5, 6]
tensor: 30; a matrix product [M, K] x [K, N]: K; a convolution: in_channels / groups x kernel
volume; a layer norm: the product of normalized_shape; softmax: the size of its dim). The
orchestrator sizes error bounds and probe plans from these numbers, so they are computed from
the op's actual arguments (shapes, dims, groups), at the level the dispatcher sees: linear and
matmul arrive as mm/addmm/bmm, instance norm as batch norm over the flattened channels.

Kinds: sum (sum, nansum, mean, var, std, norms, prod, logsumexp, softmax and log_softmax
denominators), dot (mm, bmm, addmm, baddbmm, addbmm, mv, addmv, dot, matmul, linear,
convolutions, attention: one entry for the head dim, one for the key length), norm (layer,
group, batch in training, rms), compare (amax, amin, max, min, argmax, argmin, max pooling) and
scan (cumsum, cumprod, logcumsumexp). An op in this table that does not reduce in a given call
(max of two tensors, batch norm on running statistics) contributes nothing.
"""

import math

from kcv.worker.opargs import bind


def _shape(t) -> list:
    return list(getattr(t, "shape", ()))


def _norm_dims(dims, rank: int) -> list:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    dims = list(dims)
    if not dims:
        return list(range(rank))  # an empty dim list reduces everything (sum, amax, mean)
    return [d % rank if rank else 0 for d in dims]


def _over(t, dims) -> int:
    shape = _shape(t)
    if not shape:
        return 1
    return math.prod(shape[d] for d in _norm_dims(dims, len(shape)))


def _pool_window(a, nd: int) -> int:
    k = list(a["kernel_size"]) if not isinstance(a["kernel_size"], int) else [a["kernel_size"]]
    return math.prod(k * nd if len(k) == 1 else k)


def _adaptive_window(a, nd: int) -> int:
    out = a["output_size"]
    out = [out] * nd if isinstance(out, int) else list(out)
    spatial = _shape(a["self"])[-nd:]
    return math.prod(-(-i // max(o, 1)) if o else 1 for i, o in zip(spatial, out))


def _conv(a) -> int:
    w = _shape(a["weight"])
    per_group = w[0] // max(a.get("groups", 1), 1) if a.get("transposed") else w[1]
    return per_group * math.prod(w[2:])


def _batch_norm(a):
    if not a.get("training", False):
        return None  # running statistics: nothing is reduced
    shape = _shape(a["input"])
    return math.prod(shape) // shape[1] if len(shape) > 1 and shape[1] else math.prod(shape)


def _attention(a) -> list:
    return [("dot", _shape(a["query"])[-1]), ("dot", _shape(a["key"])[-2])]


def _maxmin(a):
    if "other" in a:
        return None  # max(a, b): elementwise
    return _over(a["self"], a.get("dim"))


_TABLE = {  # packet name -> (kind, length(bound args) -> int | None | [(kind, length)])
    **{n: ("sum", lambda a: _over(a["self"], a.get("dim")))
       for n in ("sum", "nansum", "mean", "var", "std", "var_mean", "std_mean", "prod",
                 "logsumexp", "linalg_vector_norm", "norm")},
    "_softmax": ("sum", lambda a: _over(a["self"], a["dim"])),
    "_log_softmax": ("sum", lambda a: _over(a["self"], a["dim"])),
    "mm": ("dot", lambda a: _shape(a["self"])[-1]),
    "bmm": ("dot", lambda a: _shape(a["self"])[-1]),
    "matmul": ("dot", lambda a: _shape(a["self"])[-1]),
    "mv": ("dot", lambda a: _shape(a["self"])[-1]),
    "dot": ("dot", lambda a: math.prod(_shape(a["self"]))),
    "vdot": ("dot", lambda a: math.prod(_shape(a["self"]))),
    "addmm": ("dot", lambda a: _shape(a["mat1"])[-1]),
    "addmv": ("dot", lambda a: _shape(a["mat"])[-1]),
    "baddbmm": ("dot", lambda a: _shape(a["batch1"])[-1]),
    "addbmm": ("dot", lambda a: _shape(a["batch1"])[0] * _shape(a["batch1"])[-1]),
    "linear": ("dot", lambda a: _shape(a["input"])[-1]),
    "convolution": ("dot", _conv),
    "_convolution": ("dot", _conv),
    **{n: ("dot", _attention)
       for n in ("_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_flash_attention_for_cpu",
                 "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_attention_math", "scaled_dot_product_attention")},
    "native_layer_norm": ("norm", lambda a: math.prod(a["normalized_shape"])),
    "_fused_rms_norm": ("norm", lambda a: math.prod(a["normalized_shape"])),
    "rms_norm": ("norm", lambda a: math.prod(a["normalized_shape"])),
    "native_group_norm": ("norm", lambda a: a["C"] // max(a["group"], 1) * a["HxW"]),
    "native_batch_norm": ("norm", _batch_norm),
    "_native_batch_norm_legit": ("norm", _batch_norm),
    "cudnn_batch_norm": ("norm", _batch_norm),
    "miopen_batch_norm": ("norm", _batch_norm),
    "amax": ("compare", lambda a: _over(a["self"], a.get("dim"))),
    "amin": ("compare", lambda a: _over(a["self"], a.get("dim"))),
    "max": ("compare", _maxmin),
    "min": ("compare", _maxmin),
    "argmax": ("compare", lambda a: _over(a["self"], a.get("dim"))),
    "argmin": ("compare", lambda a: _over(a["self"], a.get("dim"))),
    **{f"max_pool{n}d_with_indices": ("compare", lambda a, n=n: _pool_window(a, n))
       for n in (1, 2, 3)},
    **{f"adaptive_max_pool{n}d": ("compare", lambda a, n=n: _adaptive_window(a, n))
       for n in (1, 2, 3)},
    "cumsum": ("scan", lambda a: _over(a["self"], a["dim"])),
    "cumprod": ("scan", lambda a: _over(a["self"], a["dim"])),
    "logcumsumexp": ("scan", lambda a: _over(a["self"], a["dim"])),
}


def packet(func) -> str:
    """`addmm` for aten.addmm.default (the in-place `sum_`-style names are their own)."""
    return getattr(getattr(func, "_overloadpacket", None), "__name__", str(func))


def terms(func, args, kwargs) -> list:
    """[(kind, length)] this call of `func` contributes ([] for ops that do not reduce)."""
    entry = _TABLE.get(packet(func))
    if entry is None:
        return []
    kind, length = entry
    try:
        value = length(bind(func, args, kwargs))
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
        return []  # an overload whose arguments the table does not know
    if value is None:
        return []
    if isinstance(value, list):
        return [(k, int(v)) for k, v in value]
    return [(kind, int(value))]
