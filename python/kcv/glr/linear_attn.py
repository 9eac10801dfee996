"""Linear attention with fla 0.6's signatures: chunk_linear_attn and fused_recurrent_linear_attn.

normalize=True (chunk_linear_attn's default) divides o_t by ⟨scale·q_t, z_t⟩ + 1e-10, where
z_t = z_0 + Σ_{s≤t} k_s is the running key sum of each sequence (fla.ops.linear_attn.utils), done
with differentiable torch ops after the recurrence. Then initial_state may be a pair
(kv_state, z_state [N, 1, H, K]) and the op returns (o, (final_state or None, z_state)), as fla."""

from __future__ import annotations

import torch

from kcv.glr import _options
from kcv.glr._autograd import run
from kcv.glr._native import LA
from kcv.glr._validate import check_float

NORMALIZE_EPS = 1e-10


def _split_state(initial_state, normalize):
    if normalize and isinstance(initial_state, tuple):
        if len(initial_state) != 2:
            raise ValueError("initial_state: expected a pair (kv_state, z_state)")
        return initial_state
    if isinstance(initial_state, tuple):
        raise ValueError("initial_state: a (kv_state, z_state) pair needs normalize=True")
    return initial_state, None


def _key_sums(k, z_init, cu):
    """z_t (float64 or float32) per token [B, T, H, K], and the last one per sequence."""
    work = torch.float64 if k.dtype == torch.float64 else torch.float32
    kf = k.to(work)
    B, T, H, K = k.shape
    bounds = [(b, 0, T) for b in range(B)] if cu is None else [(0, a, e) for a, e in
                                                                zip(cu, cu[1:])]
    pieces, last = [], []
    for n, (b, a, e) in enumerate(bounds):
        z = kf[b, a:e].cumsum(0)
        if z_init is not None:
            z = z + z_init[n, 0].to(work)
        pieces.append(z)
        last.append(z[-1:])
    z_all = torch.cat(pieces, 0).reshape(B, T, H, K) if cu is not None else torch.stack(pieces)
    return z_all, torch.stack(last)  # [N, 1, H, K]


def _normalize(o, q, k, scale, z_init, cu):
    B, T, H, K = q.shape
    if o.shape[2] != H:
        raise ValueError(f"v: normalize=True needs as many value heads as q heads ({H}), got "
                         f"{o.shape[2]}")
    if z_init is not None:
        if not isinstance(z_init, torch.Tensor):
            raise TypeError(f"initial_state: z_state must be a tensor, got {type(z_init).__name__}")
        check_float("initial_state", z_init)
        N = B if cu is None else len(cu) - 1
        if tuple(z_init.shape) != (N, 1, H, K):
            raise ValueError(f"initial_state: z_state expected shape {(N, 1, H, K)}, got "
                             f"{tuple(z_init.shape)}")
    z, z_last = _key_sums(k, z_init, cu)
    denom = (q.to(z.dtype) * scale * z).sum(-1, keepdim=True) + NORMALIZE_EPS
    return (o.to(z.dtype) / denom).to(o.dtype), z_last.to(k.dtype)


def _offsets(cu_seqlens):
    return None if cu_seqlens is None else [int(x) for x in cu_seqlens.cpu().tolist()]


def _linear_attn(mode, q, k, v, scale, initial_state, output_final_state, normalize,
                 cu_seqlens, cu_seqlens_cpu):
    kv_init, z_init = _split_state(initial_state, normalize)
    o, ht = run(LA, mode, q, k, v, None, None, scale, kv_init, output_final_state, False,
                cu_seqlens, cu_seqlens_cpu)
    if not normalize:
        return o, ht
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    cu = _offsets(cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens)
    o, z_state = _normalize(o, q, k, scale, z_init, cu)
    return o, (ht, z_state)


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False,
                      normalize=True, cu_seqlens=None, **kwargs):
    """fla.ops.linear_attn.chunk_linear_attn. kwargs: cu_seqlens_cpu."""
    cu_seqlens_cpu = kwargs.pop("cu_seqlens_cpu", None)
    _options.finish(kwargs)
    return _linear_attn("chunk", q, k, v, scale, initial_state, output_final_state, normalize,
                        cu_seqlens, cu_seqlens_cpu)


def fused_recurrent_linear_attn(q, k, v, scale=None, initial_state=None,
                                output_final_state=False, reverse=False, normalize=False,
                                cu_seqlens=None, **kwargs):
    """Decode op, fla.ops.linear_attn.fused_recurrent_linear_attn. kwargs: cu_seqlens_cpu."""
    cu_seqlens_cpu = kwargs.pop("cu_seqlens_cpu", None)
    _options.finish(kwargs)
    _options.refuse("reverse", reverse, False)
    return _linear_attn("recurrent", q, k, v, scale, initial_state, output_final_state,
                        normalize, cu_seqlens, cu_seqlens_cpu)
