"""The gated members without the delta rule, with fla 0.6's signatures: GLA (chunk_gla,
fused_recurrent_gla; per-channel gate) and simple GLA / SSD / Mamba-2 (chunk_simple_gla,
fused_recurrent_simple_gla; scalar gate g [B, T, HV], or a per-head constant g_gamma [HV], or
neither, which is plain linear attention). Every op returns (o, final_state or None)."""

from __future__ import annotations

import torch

from kcv.glr import _options
from kcv.glr._autograd import run
from kcv.glr._native import GLA, LA, SSD


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False,
              state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, *, precision=None):
    """Gated linear attention, fla.ops.gla.chunk_gla; g is the per-channel log-decay. precision:
    "fp32", "bf16" or None (the default)."""
    return run(GLA, "chunk", q, k, v, g, None, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu, precision=precision)


def _scalar_gate(g, g_gamma, v):
    """(member, g): g_gamma [HV] is broadcast to [B, T, HV] (differentiably)."""
    if g is not None and g_gamma is not None:
        raise ValueError("g_gamma: give only one of g and g_gamma")
    if g_gamma is not None:
        if not isinstance(g_gamma, torch.Tensor):
            raise TypeError(f"g_gamma: expected a torch.Tensor, got {type(g_gamma).__name__}")
        if not isinstance(v, torch.Tensor) or v.dim() != 4:
            raise ValueError("v: expected a 4-D tensor [B, T, HV, V]")
        if g_gamma.dim() != 1 or g_gamma.shape[0] != v.shape[2]:
            raise ValueError(f"g_gamma: expected shape ({v.shape[2]},), got "
                             f"{tuple(g_gamma.shape)}")
        work = torch.float64 if g_gamma.dtype == torch.float64 else torch.float32
        g = g_gamma.to(work).expand(v.shape[0], v.shape[1], -1).contiguous()
    return (LA, None) if g is None else (SSD, g)


def chunk_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None,
                     output_final_state=False, state_v_first=False, cu_seqlens=None,
                     cu_seqlens_cpu=None, *, precision=None, **kwargs):
    """Simple GLA / SSD, fla.ops.simple_gla.chunk_simple_gla. kwargs: chunk_size (a power of 2),
    transpose_state_layout. precision: "fp32", "bf16" or None (the default)."""
    state_v_first = _options.state_layout(state_v_first, kwargs)
    chunk = _options.chunk_size(kwargs, "pow2")
    _options.finish(kwargs)
    member, g = _scalar_gate(g, g_gamma, v)
    return run(member, "chunk", q, k, v, g, None, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu, chunk, precision)


def fused_recurrent_gla(q, k, v, gk=None, gv=None, scale=None, initial_state=None,
                        output_final_state=False, reverse=False, state_v_first=False,
                        cu_seqlens=None, **kwargs):
    """Decode op of GLA, fla.ops.gla.fused_recurrent_gla; without gk it is linear attention.
    kwargs: cu_seqlens_cpu, transpose_state_layout."""
    state_v_first, cu_seqlens_cpu = _options.decode_options(state_v_first, kwargs)
    if gv is not None:
        raise NotImplementedError("gv: a value-side gate is not supported by kcv.glr")
    _options.refuse("reverse", reverse, False)
    member = LA if gk is None else GLA
    return run(member, "recurrent", q, k, v, gk, None, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu)


def fused_recurrent_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None,
                               output_final_state=False, reverse=False, state_v_first=False,
                               cu_seqlens=None, **kwargs):
    """Decode op of simple GLA / SSD, fla.ops.simple_gla.fused_recurrent_simple_gla.
    kwargs: cu_seqlens_cpu, transpose_state_layout."""
    state_v_first, cu_seqlens_cpu = _options.decode_options(state_v_first, kwargs)
    _options.refuse("reverse", reverse, False)
    member, g = _scalar_gate(g, g_gamma, v)
    return run(member, "recurrent", q, k, v, g, None, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu)
