"""The two torch custom ops every public op ends in, their autograd, and run().

kcv_glr::forward and kcv_glr::backward are registered with torch.library.custom_op, each with a
fake (meta) implementation that gives the outputs' shapes and dtypes from the inputs' alone, and
forward's gradient is kcv_glr::backward (torch.library.register_autograd). So torch.compile traces
a call into one opaque node per direction instead of breaking the graph on kcv._glr, and AOT
autograd sees the backward. The ops are functional: they allocate their outputs and mutate
nothing. The real implementations are _launch.forward / _launch.backward.

A custom op returns tensors, never None: an absent final state or gradient travels as an empty
tensor (0 elements) and becomes None again here. The offsets' values are read inside the ops
(read_offsets): from cu_seqlens_cpu when given, so a CUDA call then waits for nothing on the host;
else from cu_seqlens, a device-to-host copy, as fla does. The precision grade ("fp32" or "bf16",
_precision.py) is a static string argument of both ops, and the forward's keep policy ("auto",
"always", "never"; _keep.py) one of the forward, each resolved by run() before the op: the ops
never read the process-wide defaults. A forward that keeps its pieces returns them as a third
output (uint8, empty otherwise), which autograd saves and hands to kcv_glr::backward.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from kcv.glr import _keep, _launch
from kcv.glr._native import has_cuda
from kcv.glr._precision import resolve
from kcv.glr._validate import check_scale, dims_of, read_offsets, validate

_EMPTY = (0,)


def _or_empty(t: Optional[Tensor], like: Tensor) -> Tensor:
    return like.new_empty(_EMPTY) if t is None else t


@torch.library.custom_op("kcv_glr::forward", mutates_args=())
def glr_forward(q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor], beta: Optional[Tensor],
                h0: Optional[Tensor], cu_seqlens: Optional[Tensor],
                cu_seqlens_cpu: Optional[Tensor], member: int, mode: str, scale: float,
                v_first: bool, chunk_size: int, want_state: bool, decode_kernel: bool,
                precision: str, keep: str) -> tuple[Tensor, Tensor, Tensor]:
    """(o, final state (empty without want_state), kept (empty when nothing is kept)).
    decode_kernel picks the CUDA decode kernel; precision is the grade ("fp32" or "bf16") that
    picks the chunk kernels (chunk_path); keep the policy of _keep.py."""
    dims = dims_of(q, v, cu_seqlens)
    cu = read_offsets(cu_seqlens, cu_seqlens_cpu, dims.T)
    o, ht, kept = _launch.forward(member, mode, dims, cu, scale, v_first, chunk_size, want_state,
                                  decode_kernel, precision, keep, q, k, v, g, beta, h0,
                                  cu_seqlens)
    return o, _or_empty(ht, q), _or_empty(kept, q)


@glr_forward.register_fake
def _forward_fake(q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, member, mode, scale, v_first,
                  chunk_size, want_state, decode_kernel, precision, keep):
    dims = dims_of(q, v, cu_seqlens)
    o = q.new_empty((dims.B, dims.T, dims.HV, dims.V))
    ht = q.new_empty(_EMPTY)
    if want_state:
        ht = q.new_empty(_launch.state_shape_of(dims, v_first), dtype=_launch.state_dtype(q))
    shape = None if decode_kernel else _launch.kept_shape(member, mode, dims, precision, keep, q,
                                                          beta, cu_seqlens is not None)
    kept = q.new_empty(_EMPTY) if shape is None else q.new_empty(shape, dtype=torch.uint8)
    return o, ht, kept


@torch.library.custom_op("kcv_glr::backward", mutates_args=())
def glr_backward(q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor], beta: Optional[Tensor],
                 h0: Optional[Tensor], cu_seqlens: Optional[Tensor],
                 cu_seqlens_cpu: Optional[Tensor], d_o: Tensor, d_ht: Optional[Tensor],
                 kept: Optional[Tensor], member: int, mode: str, scale: float, v_first: bool,
                 chunk_size: int,
                 precision: str) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dg, dbeta, dh0), each like its input; empty where the input is None. kept:
    the forward's kept part, or None (the backward recomputes)."""
    dims = dims_of(q, v, cu_seqlens)
    cu = read_offsets(cu_seqlens, cu_seqlens_cpu, dims.T)
    grads = _launch.backward(member, mode, dims, cu, scale, v_first, chunk_size, precision, q, k,
                             v, g, beta, h0, cu_seqlens, d_o, d_ht, kept)
    return tuple(_or_empty(t, q) for t in grads)


@glr_backward.register_fake
def _backward_fake(q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, d_o, d_ht, kept, member,
                   mode, scale, v_first, chunk_size, precision):
    return tuple(q.new_empty(_EMPTY) if t is None else torch.empty_like(t)
                 for t in (q, k, v, g, beta, h0))


def _setup_context(ctx, inputs, output):
    (q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, member, mode, scale, v_first, chunk_size,
     _want_state, _decode_kernel, precision, _keep_policy) = inputs
    kept = output[2]
    # No zero tensors for the outputs that got no gradient: the kept pieces (uint8) never get one,
    # and autograd would otherwise fill a zero buffer of their size (409 MB for GDN at
    # B1·T8192·H32·D128) every backward.
    # _backward handles None for each.
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, kept)
    ctx.meta = (member, mode, scale, v_first, chunk_size, precision)


def _backward(ctx, d_o, d_ht, _d_kept):
    q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, kept = ctx.saved_tensors
    member, mode, scale, v_first, chunk_size, precision = ctx.meta
    kept = None if kept.numel() == 0 else kept
    if d_o is None:
        dims = dims_of(q, v, cu_seqlens)
        d_o = q.new_zeros((dims.B, dims.T, dims.HV, dims.V))
    d_ht = None if d_ht is None or d_ht.numel() == 0 else d_ht
    grads = glr_backward(q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu, d_o, d_ht, kept,
                         member, mode, scale, v_first, chunk_size, precision)
    inputs = (q, k, v, g, beta, h0)
    return tuple(None if t is None else dt for dt, t in zip(grads, inputs)) + (None,) * 11


glr_forward.register_autograd(_backward, setup_context=_setup_context)


def _needs_grad(tensors):
    return torch.is_grad_enabled() and any(
        isinstance(t, Tensor) and t.requires_grad for t in tensors)


def run(member, mode, q, k, v, g, beta, scale, initial_state, output_final_state, state_v_first,
        cu_seqlens, cu_seqlens_cpu, chunk_size=64, precision=None):
    """Validates, then runs one member on the chunk or recurrent path; returns (o, state|None).
    Strided views are made contiguous first, as fla's input guard does (a copy only then).
    precision: the chunk path's grade, None for the process-wide default (_precision.py); the
    recurrent path runs at the fp32 grade."""
    grade = resolve(precision) if mode == "chunk" else "fp32"
    q, k, v, g, beta, initial_state, cu_seqlens = (
        t.contiguous() if isinstance(t, Tensor) else t
        for t in (q, k, v, g, beta, initial_state, cu_seqlens))
    dims = validate(member, q, k, v, g, beta, initial_state, cu_seqlens, cu_seqlens_cpu,
                    state_v_first, decode=(mode == "recurrent"))
    scale = check_scale(scale, dims.K)
    if q.is_cuda and not has_cuda():
        raise RuntimeError("q: CUDA tensor, but kcv._glr was built without the CUDA kernels")
    needs_grad = _needs_grad((q, k, v, g, beta, initial_state))
    decode_kernel = mode == "recurrent" and not needs_grad
    o, ht, _kept = glr_forward(q, k, v, g, beta, initial_state, cu_seqlens, cu_seqlens_cpu, member,
                               mode, scale, bool(state_v_first), int(chunk_size),
                               bool(output_final_state), decode_kernel, grade,
                               _keep.resolve(needs_grad))
    return o, (ht if output_final_state else None)
