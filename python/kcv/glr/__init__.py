"""kcv.glr: fla-v0.5-compatible gated linear recurrence ops on kcv's kernels.

chunk_gated_delta_rule, chunk_kda, chunk_gla, chunk_simple_gla and chunk_linear_attn take fla
v0.5's arguments (gdn-spec.md section 11) and return (o, final_state). CUDA tensors run kcv's
sm_90a kernels through kcv._glr (raw device pointers, the current torch stream, a torch-allocated
workspace); CPU tensors run the fp64 chunked reference (inputs upcast to float64, results cast
back to the input dtypes), so the API works and is testable without a GPU. Bad input raises
ValueError / TypeError naming the argument. Unsupported fla options (fused gates, context
parallelism, chunk_linear_attn's normalize=True) raise NotImplementedError.
"""

from __future__ import annotations

import torch

from kcv import _glr

__all__ = [
    "chunk_gated_delta_rule",
    "chunk_kda",
    "chunk_gla",
    "chunk_simple_gla",
    "chunk_linear_attn",
    "has_cuda",
]

# Member codes of kcv::glr::Member (include/kcv/glr/member.hpp).
LA, SSD, GLA, DELTANET, GDN, KDA = range(6)
_GATE = {LA: None, SSD: "scalar", GLA: "channel", DELTANET: None, GDN: "scalar", KDA: "channel"}
_DELTA = {LA: False, SSD: False, GLA: False, DELTANET: True, GDN: True, KDA: True}
MAX_HEAD_DIM = int(_glr.MAX_HEAD_DIM)


def has_cuda() -> bool:
    """True when kcv._glr was built with the sm_90a kernels."""
    return bool(_glr.has_cuda())


# --------------------------------------------------------------------------- validation


def _check_tensor(name, t, ndim):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: tensor must be contiguous (call .contiguous())")


def _check_shape(name, t, want):
    if tuple(t.shape) != tuple(want):
        raise ValueError(f"{name}: expected shape {tuple(want)}, got {tuple(t.shape)}")


def _gpu_cfg(scale, v_first, g, beta, cu_seqlens):
    """(scale, v_first, gate fp32?, beta fp32?, cu_seqlens int32?) as the launchers take them."""
    return (scale, v_first, g is not None and g.dtype == torch.float32,
            beta is not None and beta.dtype == torch.float32,
            cu_seqlens is not None and cu_seqlens.dtype == torch.int32)


def _gpu_dims(dims, cu_host):
    """The launcher counts sequences only with cu_seqlens (num_seqs = 0 for a plain batch)."""
    return tuple(dims[:6]) + ((dims[6] if cu_host is not None else 0),)


def _validate(member, q, k, v, g, beta, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first):
    """Checks every argument; returns (dims, host cu_seqlens list or None)."""
    _check_tensor("q", q, 4)
    _check_tensor("k", k, 4)
    _check_tensor("v", v, 4)
    B, T, H, K = q.shape
    _check_shape("k", k, q.shape)
    if v.shape[0] != B or v.shape[1] != T:
        raise ValueError(f"v: expected leading dims ({B}, {T}) like q, got shape {tuple(v.shape)}")
    HV, V = v.shape[2], v.shape[3]
    if H == 0 or HV % H != 0:
        raise ValueError(f"v: value heads {HV} must be a positive multiple of q's heads {H} (GVA)")
    if not 1 <= K <= MAX_HEAD_DIM:
        raise ValueError(f"q: unsupported head dim K={K} (1..{MAX_HEAD_DIM})")
    if not 1 <= V <= MAX_HEAD_DIM:
        raise ValueError(f"v: unsupported head dim V={V} (1..{MAX_HEAD_DIM})")
    if T == 0:
        raise ValueError("q: sequence length must be positive")
    device = q.device
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: dtype {t.dtype} differs from q's {q.dtype} (mixed dtypes)")
        if t.device != device:
            raise ValueError(f"{name}: on {t.device}, q on {device}")
    if not q.dtype.is_floating_point:
        raise TypeError(f"q: expected a floating dtype, got {q.dtype}")
    if device.type == "cuda" and q.dtype != torch.bfloat16:
        raise TypeError(f"q: the CUDA kernels take bfloat16 q/k/v, got {q.dtype}")
    gate = _GATE[member]
    if gate is None:
        if g is not None:
            raise ValueError("g: this op has no gate")
    else:
        if g is None:
            raise ValueError("g: required")
        _check_tensor("g", g, 3 if gate == "scalar" else 4)
        _check_shape("g", g, (B, T, HV) if gate == "scalar" else (B, T, HV, K))
        if g.device != device:
            raise ValueError(f"g: on {g.device}, q on {device}")
        if device.type == "cuda" and g.dtype not in (torch.float32, torch.bfloat16):
            raise TypeError(f"g: expected float32 or bfloat16, got {g.dtype}")
        if not g.dtype.is_floating_point:
            raise TypeError(f"g: expected a floating dtype, got {g.dtype}")
    if _DELTA[member]:
        if beta is None:
            raise ValueError("beta: required")
        _check_tensor("beta", beta, 3)
        _check_shape("beta", beta, (B, T, HV))
        if beta.device != device:
            raise ValueError(f"beta: on {beta.device}, q on {device}")
        if device.type == "cuda" and beta.dtype not in (torch.float32, torch.bfloat16):
            raise TypeError(f"beta: expected float32 or bfloat16, got {beta.dtype}")
        if not beta.dtype.is_floating_point:
            raise TypeError(f"beta: expected a floating dtype, got {beta.dtype}")
    cu_host = None
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1:
            raise ValueError("cu_seqlens: expected a 1-D tensor of N+1 offsets")
        if cu_seqlens.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"cu_seqlens: expected int32 or int64, got {cu_seqlens.dtype}")
        if not cu_seqlens.is_contiguous():
            raise ValueError("cu_seqlens: tensor must be contiguous (call .contiguous())")
        if cu_seqlens.device != device:
            raise ValueError(f"cu_seqlens: on {cu_seqlens.device}, q on {device}")
        if B != 1:
            raise ValueError(f"cu_seqlens: the batch size must be 1 with cu_seqlens, got {B}")
        host = cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens.cpu()
        cu_host = [int(x) for x in host.tolist()]
        if len(cu_host) < 2:
            raise ValueError("cu_seqlens: needs at least two offsets")
        if cu_host[0] != 0:
            raise ValueError(f"cu_seqlens: must start at 0, got {cu_host[0]}")
        if any(b <= a for a, b in zip(cu_host, cu_host[1:])):
            raise ValueError("cu_seqlens: offsets must be strictly increasing (non-monotone)")
        if cu_host[-1] != T:
            raise ValueError(f"cu_seqlens: must end at T={T}, got {cu_host[-1]}")
        N = len(cu_host) - 1
    else:
        N = B
    if initial_state is not None:
        _check_tensor("initial_state", initial_state, 4)
        want = (N, HV, V, K) if state_v_first else (N, HV, K, V)
        _check_shape("initial_state", initial_state, want)
        if initial_state.device != device:
            raise ValueError(f"initial_state: on {initial_state.device}, q on {device}")
    return (B, T, H, HV, K, V, N), cu_host


# --------------------------------------------------------------------------- autograd


def _np64(t):
    return None if t is None else t.detach().to(torch.float64).contiguous().reshape(-1).numpy()


def _from_np(a, shape, like_dtype, device):
    return torch.from_numpy(a).reshape(shape).to(device=device, dtype=like_dtype)


def _ptr(t):
    return 0 if t is None else t.data_ptr()


class _GlrFunction(torch.autograd.Function):
    """One autograd node for every member: kernels on CUDA, fp64 reference on CPU."""

    @staticmethod
    def forward(ctx, member, dims, cu_host, scale, v_first, want_state, q, k, v, g, beta, h0,
                cu_seqlens):
        B, T, H, HV, K, V, N = dims
        h0f = None if h0 is None else h0.to(torch.float32 if q.is_cuda else h0.dtype).contiguous()
        state_shape = (N, HV, V, K) if v_first else (N, HV, K, V)
        if q.is_cuda:
            o = torch.empty((B, T, HV, V), dtype=q.dtype, device=q.device)
            ht = torch.empty(state_shape, dtype=torch.float32, device=q.device) if want_state else None
            cfg = _gpu_cfg(scale, v_first, g, beta, cu_seqlens)
            dims = _gpu_dims(dims, cu_host)
            nbytes = _glr.gpu_workspace_bytes(False, member, dims, *cfg)
            ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
            stream = torch.cuda.current_stream(q.device).cuda_stream
            _glr.gpu_forward(member, dims, *cfg,
                             (q.data_ptr(), k.data_ptr(), v.data_ptr(), _ptr(g), _ptr(beta),
                              _ptr(h0f), _ptr(cu_seqlens)),
                             cu_host or [], o.data_ptr(), _ptr(ht), ws.data_ptr(), nbytes, stream)
        else:
            cu = cu_host if cu_host is not None else ([b * T for b in range(B + 1)] if B > 1 else [])
            o64, ht64 = _glr.ref_forward(member, (B * T, H, HV, K, V), cu, _np64(q), _np64(k),
                                         _np64(v), _np64(g), _np64(beta), _np64(h0f), scale,
                                         v_first)
            o = _from_np(o64, (B, T, HV, V), q.dtype, q.device)
            state_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
            ht = _from_np(ht64, state_shape, state_dtype, q.device) if want_state else None
        ctx.save_for_backward(q, k, v, g, beta, h0f, cu_seqlens)
        ctx.meta = (member, dims, cu_host, scale, v_first, want_state,
                    None if h0 is None else h0.dtype)
        if ht is None:
            return o
        return o, ht

    @staticmethod
    def backward(ctx, d_o, d_ht=None):
        member, dims, cu_host, scale, v_first, want_state, h0_dtype = ctx.meta
        q, k, v, g, beta, h0f, cu_seqlens = ctx.saved_tensors
        B, T, H, HV, K, V, N = dims
        if d_ht is not None and d_ht.numel() == 0:
            d_ht = None
        if q.is_cuda:
            d_o = d_o.to(q.dtype).contiguous()
            d_ht = None if d_ht is None else d_ht.to(torch.float32).contiguous()
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            dg = None if g is None else torch.empty_like(g)
            db = None if beta is None else torch.empty_like(beta)
            dh0 = None if h0f is None else torch.empty_like(h0f)
            cfg = _gpu_cfg(scale, v_first, g, beta, cu_seqlens)
            dims = _gpu_dims(dims, cu_host)
            nbytes = _glr.gpu_workspace_bytes(True, member, dims, *cfg)
            ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
            stream = torch.cuda.current_stream(q.device).cuda_stream
            _glr.gpu_backward(member, dims, *cfg,
                              (q.data_ptr(), k.data_ptr(), v.data_ptr(), _ptr(g), _ptr(beta),
                               _ptr(h0f), _ptr(cu_seqlens)),
                              cu_host or [], d_o.data_ptr(), _ptr(d_ht),
                              (dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), _ptr(dg), _ptr(db),
                               _ptr(dh0)),
                              ws.data_ptr(), nbytes, stream)
        else:
            cu = cu_host if cu_host is not None else ([b * T for b in range(B + 1)] if B > 1 else [])
            grads = _glr.ref_backward(member, (B * T, H, HV, K, V), cu, _np64(q), _np64(k),
                                      _np64(v), _np64(g), _np64(beta), _np64(h0f), scale,
                                      v_first, _np64(d_o), _np64(d_ht))
            dq = _from_np(grads[0], q.shape, q.dtype, q.device)
            dk = _from_np(grads[1], k.shape, k.dtype, k.device)
            dv = _from_np(grads[2], v.shape, v.dtype, v.device)
            dg = None if g is None else _from_np(grads[3], g.shape, g.dtype, g.device)
            db = None if beta is None else _from_np(grads[4], beta.shape, beta.dtype, beta.device)
            dh0 = None if h0f is None else _from_np(grads[5], h0f.shape, h0f.dtype, h0f.device)
        if dh0 is not None and h0_dtype is not None:
            dh0 = dh0.to(h0_dtype)
        return None, None, None, None, None, None, dq, dk, dv, dg, db, dh0, None


def _run(member, q, k, v, g, beta, scale, initial_state, output_final_state, state_v_first,
         cu_seqlens, cu_seqlens_cpu):
    dims, cu_host = _validate(member, q, k, v, g, beta, initial_state, cu_seqlens,
                              cu_seqlens_cpu, state_v_first)
    if scale is None:
        scale = dims[4] ** -0.5
    scale = float(scale)
    if scale != scale or scale in (float("inf"), float("-inf")):
        raise ValueError(f"scale: must be finite, got {scale}")
    if q.is_cuda and not has_cuda():
        raise RuntimeError("q: CUDA tensor, but kcv._glr was built without the CUDA kernels")
    out = _GlrFunction.apply(member, dims, cu_host, scale, bool(state_v_first),
                             bool(output_final_state), q, k, v, g, beta, initial_state,
                             cu_seqlens)
    if output_final_state:
        return out[0], out[1]
    return out, None


def _reject(name, value, default=None):
    if value is not default and value != default:
        raise NotImplementedError(f"{name}: only {default!r} is supported by kcv.glr")


def _take_chunk_size(kwargs, allowed):
    chunk_size = kwargs.pop("chunk_size", None)
    if chunk_size is not None and chunk_size not in allowed:
        raise ValueError(f"chunk_size: expected one of {sorted(allowed)}, got {chunk_size}")
    for key in ("A_log", "dt_bias"):
        if kwargs.pop(key, None) is not None:
            raise NotImplementedError(f"{key}: the fused gate is not supported by kcv.glr")
    if "head_first" in kwargs:
        raise ValueError("head_first: removed in fla v0.5; use the [B, T, H, D] layout")
    kwargs.pop("transpose_state_layout", None)
    if kwargs:
        raise TypeError(f"{next(iter(kwargs))}: unexpected keyword argument")


# --------------------------------------------------------------------------- public ops


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                           output_final_state=False, use_qk_l2norm_in_kernel=False,
                           use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                           cp_context=None, **kwargs):
    """Gated DeltaNet (fla.ops.gated_delta_rule.chunk_gated_delta_rule); chunk_size is accepted
    (16, 32, 64) but kcv always uses 64, which gives the same result up to rounding."""
    state_v_first = state_v_first or bool(kwargs.pop("transpose_state_layout", False))
    if kwargs.pop("use_gate_in_kernel", False):
        raise NotImplementedError("use_gate_in_kernel: the fused gate is not supported by kcv.glr")
    kwargs.pop("chunk_indices", None)
    _take_chunk_size(kwargs, {16, 32, 64})
    _reject("cp_context", cp_context)
    q, k, beta = _prologue(q, k, beta, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                           allow_neg_eigval)
    return _run(GDN, q, k, v, g, beta, scale, initial_state, output_final_state, state_v_first,
                cu_seqlens, cu_seqlens_cpu)


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
              use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, safe_gate=False,
              lower_bound=None, disable_recompute=False, return_intermediate_states=False,
              state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, cp_context=None,
              **kwargs):
    """Kimi Delta Attention (fla.ops.kda.chunk_kda); g is the per-channel log-decay [B,T,HV,K].
    safe_gate, lower_bound and disable_recompute only change fla's kernel choice and are ignored."""
    del safe_gate, lower_bound, disable_recompute
    if use_gate_in_kernel:
        raise NotImplementedError("use_gate_in_kernel: the fused gate is not supported by kcv.glr")
    _reject("return_intermediate_states", return_intermediate_states, False)
    _reject("cp_context", cp_context)
    _take_chunk_size(kwargs, {32, 64})
    q, k, beta = _prologue(q, k, beta, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                           allow_neg_eigval)
    return _run(KDA, q, k, v, g, beta, scale, initial_state, output_final_state, state_v_first,
                cu_seqlens, cu_seqlens_cpu)


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False,
              state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None):
    """Gated linear attention (fla.ops.gla.chunk_gla); g is the per-channel log-decay."""
    return _run(GLA, q, k, v, g, None, scale, initial_state, output_final_state, state_v_first,
                cu_seqlens, cu_seqlens_cpu)


def chunk_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None,
                     output_final_state=False, state_v_first=False, cu_seqlens=None,
                     cu_seqlens_cpu=None, **kwargs):
    """Simple GLA / SSD (fla.ops.simple_gla.chunk_simple_gla): scalar log-decay g [B,T,H], or a
    per-head constant g_gamma [H] (broadcast to g here), or neither (plain linear attention)."""
    _take_chunk_size(kwargs, {16, 32, 64})
    if g is not None and g_gamma is not None:
        raise ValueError("g_gamma: give only one of g and g_gamma")
    if g_gamma is not None:
        if not isinstance(g_gamma, torch.Tensor) or g_gamma.dim() != 1 or \
                g_gamma.shape[0] != v.shape[2]:
            raise ValueError(f"g_gamma: expected shape ({v.shape[2]},)")
        g = g_gamma.to(torch.float32 if q.is_cuda else g_gamma.dtype).expand(
            v.shape[0], v.shape[1], -1).contiguous()
    if g is None:
        return _run(LA, q, k, v, None, None, scale, initial_state, output_final_state,
                    state_v_first, cu_seqlens, cu_seqlens_cpu)
    return _run(SSD, q, k, v, g, None, scale, initial_state, output_final_state, state_v_first,
                cu_seqlens, cu_seqlens_cpu)


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False,
                      normalize=True, cu_seqlens=None):
    """Linear attention (fla.ops.linear_attn.chunk_linear_attn). Only normalize=False is
    implemented (fla's default normalize=True divides by a running key sum; pass False)."""
    if normalize:
        raise NotImplementedError("normalize: only normalize=False is supported by kcv.glr")
    return _run(LA, q, k, v, None, None, scale, initial_state, output_final_state, False,
                cu_seqlens, None)


def _prologue(q, k, beta, l2norm, beta_sigmoid, neg_eigval):
    """fla's in-kernel conveniences, done here with differentiable torch ops."""
    if l2norm:
        q = torch.nn.functional.normalize(q, p=2, dim=-1).contiguous()
        k = torch.nn.functional.normalize(k, p=2, dim=-1).contiguous()
    if beta_sigmoid and beta is not None:
        beta = torch.sigmoid(beta) * (2.0 if neg_eigval else 1.0)
    return q, k, beta
