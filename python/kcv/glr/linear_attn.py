"""Linear attention with fla 0.6's signatures: chunk_linear_attn and fused_recurrent_linear_attn.

normalize=True (chunk_linear_attn's default) divides o_t by ⟨scale·q_t, z_t⟩ + 1e-10, where
z_t = z_0 + Σ_{s≤t} k_s is the running key sum of each sequence (fla.ops.linear_attn.utils), done
with differentiable torch ops after the recurrence, on the device (no offset is read on the host).
Then initial_state may be a pair (kv_state, z_state [N, 1, H, K]) and the op returns
(o, (final_state or None, z_state)), as fla."""

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


def _key_sums(k, z_init, cu_seqlens):
    """z_t per token [B, T, H, K] (float64, or float32 below float64), and the last one per
    sequence [N, 1, H, K]. Packed sequences take one float64 prefix sum over all tokens minus the
    prefix before each sequence's start, indexed on the device: no offset is read on the host."""
    work = torch.float64 if k.dtype == torch.float64 else torch.float32
    if cu_seqlens is None:
        z = k.to(work).cumsum(1)
        if z_init is not None:
            z = z + z_init.to(work)
        return z, z[:, -1:]
    starts, ends = cu_seqlens[:-1].long(), cu_seqlens[1:].long()
    seq = torch.searchsorted(ends, torch.arange(k.shape[1], device=k.device), right=True)
    total = k[0].to(torch.float64).cumsum(0)
    before = torch.cat([total.new_zeros((1,) + total.shape[1:]), total])[starts]
    z = total - before[seq]
    if z_init is not None:
        z = z + z_init[:, 0].to(torch.float64)[seq]
    z = z.to(work)
    return z.unsqueeze(0), z[ends - 1].unsqueeze(1)


def _normalize(o, q, k, scale, z_init, cu_seqlens):
    B, T, H, K = q.shape
    if o.shape[2] != H:
        raise ValueError(f"v: normalize=True needs as many value heads as q heads ({H}), got "
                         f"{o.shape[2]}")
    if z_init is not None:
        if not isinstance(z_init, torch.Tensor):
            raise TypeError(f"initial_state: z_state must be a tensor, got {type(z_init).__name__}")
        check_float("initial_state", z_init)
        N = B if cu_seqlens is None else cu_seqlens.shape[0] - 1
        if tuple(z_init.shape) != (N, 1, H, K):
            raise ValueError(f"initial_state: z_state expected shape {(N, 1, H, K)}, got "
                             f"{tuple(z_init.shape)}")
    z, z_last = _key_sums(k, z_init, cu_seqlens)
    denom = (q.to(z.dtype) * scale * z).sum(-1, keepdim=True) + NORMALIZE_EPS
    return (o.to(z.dtype) / denom).to(o.dtype), z_last.to(k.dtype)


def _linear_attn(mode, q, k, v, scale, initial_state, output_final_state, normalize,
                 cu_seqlens, cu_seqlens_cpu, precision=None):
    kv_init, z_init = _split_state(initial_state, normalize)
    o, ht = run(LA, mode, q, k, v, None, None, scale, kv_init, output_final_state, False,
                cu_seqlens, cu_seqlens_cpu, precision=precision)
    if not normalize:
        return o, ht
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    o, z_state = _normalize(o, q, k, scale, z_init, cu_seqlens)
    return o, (ht, z_state)


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False,
                      normalize=True, cu_seqlens=None, *, precision=None, **kwargs):
    """fla.ops.linear_attn.chunk_linear_attn. kwargs: cu_seqlens_cpu. precision: "fp32", "bf16"
    or None (the default); it picks the recurrence's kernels, the normalisation is torch ops."""
    cu_seqlens_cpu = kwargs.pop("cu_seqlens_cpu", None)
    _options.finish(kwargs)
    return _linear_attn("chunk", q, k, v, scale, initial_state, output_final_state, normalize,
                        cu_seqlens, cu_seqlens_cpu, precision)


def fused_recurrent_linear_attn(q, k, v, scale=None, initial_state=None,
                                output_final_state=False, reverse=False, normalize=False,
                                cu_seqlens=None, **kwargs):
    """Decode op, fla.ops.linear_attn.fused_recurrent_linear_attn. kwargs: cu_seqlens_cpu."""
    cu_seqlens_cpu = kwargs.pop("cu_seqlens_cpu", None)
    _options.finish(kwargs)
    _options.refuse("reverse", reverse, False)
    return _linear_attn("recurrent", q, k, v, scale, initial_state, output_final_state,
                        normalize, cu_seqlens, cu_seqlens_cpu)
