"""The GLR error model (tau) that gates_vs_fla.py gives kcv's judges, as kcv's C++ core computes it
(include/kcv/glr/error_model.hpp, bound in kcv._glr). This module holds no formula: it turns the
scripts' torch tensors ([B, T, heads, ...] with an optional cu_seqlens) into the flat, packed
arrays of the C++ model and back.

  tau_i = u_out*|y*_i| + c*u_f32*(sqrt(N) + G)*S_i + c*sigma_i

u_out the output dtype's unit roundoff, c = 4, N = L + K + V + 64, G the largest |chunk-local
cumulative log-decay|, S_i = 2 RMS(y*) over the element's (sequence, head) slice (for dg the
larger of that and ||p||_2 + |sum p| over the chunk form's terms, dg_terms), and sigma_i the
first-order error of the precision contract's declared roundings (zero for the fp32 grade;
declared_sigma for o and the final state, declared_backward_sigma for the gradients). The
derivation is
docs/glr/precision-contract.md. Nothing here looks at a candidate's output.
"""

from typing import NamedTuple

import torch

from kcv import _glr

CHUNK = 64
C_CONF = float(_glr.CONFIDENCE)
GRADES = ("fp32", "bf16")
# The kernels' output dtypes (the interface the judges read the arrays with).
OUT_DTYPE = {"o": "bf16", "dq": "bf16", "dk": "bf16", "dv": "bf16", "dbeta": "bf16",
             "ht": "f32", "dh0": "f32", "dg": "f32"}
STATE_OUTPUTS = ("ht", "dh0")  # [N, HV, K, V]; the rest are per token [B, T, heads, ...]
MEMBER_CODE = {"la": 0, "ssd": 1, "gla": 2, "deltanet": 3, "gdn": 4, "kda": 5}


class Case(NamedTuple):
    """The C++ model's view of one case: dims (tokens, H, HV, K, V) packed along T, cu_seqlens
    ([] for one sequence), g's width per (token, value head), and the fp32 term's N and G."""
    dims: tuple
    cu: list
    gate_width: int
    N: int
    G: float


def _flat(t):
    return None if t is None else t.detach().double().cpu().contiguous().reshape(-1).numpy()


def _packed_cu(B, T, cu):
    if cu is not None:
        return [int(c) for c in cu]
    return [] if B == 1 else [b * T for b in range(B + 1)]


def case(x, cu=None):
    """The Case of inputs x (q, k [B, T, H, K]; v [B, T, HV, V]; g [B, T, HV(, K)] or None)."""
    B, T, H, K = x["q"].shape
    HV, V = x["v"].shape[2], x["v"].shape[3]
    dims = (B * T, H, HV, K, V)
    cu_list = _packed_cu(B, T, cu)
    g = x.get("g")
    width = 0 if g is None else (1 if g.dim() == 3 else int(g.shape[-1]))
    N, G = _glr.model_scale(dims, cu_list, _flat(g))
    return Case(dims, cu_list, width, int(N), float(G))


def describe(c):
    """One line for the report: the numbers of the fp32 term for a case."""
    return _glr.describe_model(c.N, c.G)


def tau(ref, name, c, terms=None, sigma=None):
    """tau of every element of output `name` (its fp64 oracle value `ref`, any shape of the
    output's layout), float64 CPU tensor of ref's shape. terms: dg's S (dg_terms); sigma: the
    declared-rounding sigma (declared_sigma; None = fp32 grade)."""
    out = _glr.tau(name, _flat(ref), c.dims, c.cu, c.gate_width, c.N, c.G, _flat(terms),
                   _flat(sigma))
    return torch.from_numpy(out).reshape(ref.shape)


def _problem(member, x, cu, scale):
    B, T, H, K = x["q"].shape
    HV, V = x["v"].shape[2], x["v"].shape[3]
    scale = K ** -0.5 if scale is None else scale
    return (MEMBER_CODE[member], (B * T, H, HV, K, V), _packed_cu(B, T, cu), _flat(x["q"]),
            _flat(x["k"]), _flat(x["v"]), _flat(x.get("g")), _flat(x.get("beta")),
            _flat(x.get("h0")), scale, False)


def dg_terms(member, x, cu=None, scale=None):
    """(S, sum p) of every dg element: S = ||p||_2 + |sum p| over the terms p that the chunk form
    sums into it. Float64 CPU tensors shaped like dg."""
    S, total = _glr.dg_terms(*_problem(member, x, cu, scale), _flat(x["do"]), _flat(x["dht"]))
    shape = x["g"].shape
    return torch.from_numpy(S).reshape(shape), torch.from_numpy(total).reshape(shape)


def declared_sigma(member, x, cu=None, grade="bf16", scale=None):
    """{"o": sigma [B, T, HV, V], "ht": sigma [N, HV, K, V]} under a grade's declared roundings."""
    so, sh = _glr.declared_sigma(*_problem(member, x, cu, scale), grade)
    B, T = x["q"].shape[:2]
    HV, V, K = x["v"].shape[2], x["v"].shape[3], x["q"].shape[3]
    N = B if cu is None else len(cu) - 1
    return {"o": torch.from_numpy(so).reshape(B, T, HV, V),
            "ht": torch.from_numpy(sh).reshape(N, HV, K, V)}


#: The gradients declared_backward_sigma returns, in its order.
GRADIENTS = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


def declared_backward_sigma(member, x, cu=None, grade="bf16", scale=None):
    """{gradient name: sigma shaped like it} under a grade's declared roundings, for the members
    (docs/glr/precision-contract.md §6)."""
    sig = _glr.declared_backward_sigma(*_problem(member, x, cu, scale), _flat(x["do"]),
                                       _flat(x["dht"]), grade)
    shapes = {"dq": x["q"].shape, "dk": x["k"].shape, "dv": x["v"].shape,
              "dg": None if x.get("g") is None else x["g"].shape,
              "dbeta": None if x.get("beta") is None else x["beta"].shape,
              "dh0": None if x.get("h0") is None else x["h0"].shape}
    return {n: torch.from_numpy(a).reshape(shapes[n]) for n, a in zip(GRADIENTS, sig)
            if a.size > 0 and shapes[n] is not None}
