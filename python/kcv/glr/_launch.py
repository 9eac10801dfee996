"""The launches behind the ops kcv_glr::forward and kcv_glr::backward (_autograd.py): plain
functions of tensors that allocate their outputs and workspaces with torch and return them.
  * CPU tensors run fp64 code in kcv._glr (inputs upcast to float64, results cast back to q's
    dtype, the state float32, or float64 for float64 inputs): the chunked reference for "chunk",
    the token-serial oracle and its adjoint for "recurrent".
  * CUDA tensors run the sm_90a chunk kernels, or the decode kernel (fp32, token by token) when
    the caller asks for it (a "recurrent" call no input of which needs a gradient). Which chunk
    kernels is _precision.chunk_path's decision from the call and its grade: the CUDA-core
    kernels (glr/kernels, fp32 grade), or under the bf16 grade the tensor-core kernels of glr/dev
    (K = V = 128, every member; bf16 q/k/v and β). Their forward keeps its pieces
    for the backward when the call's keep policy says so (_keep.py), else their backward
    recomputes them from the saved inputs, as the CUDA-core backward always does.
  * PATHS counts the launches by (direction, path), and BACKWARD_PIECES the tensor-core
    backwards by whether they read kept pieces, so a test can see which kernels ran.
On CUDA nothing here waits for the device: every tensor and workspace comes from torch's caching
allocator (so a CUDA graph capture takes them from its private pool), every kernel goes to
torch.cuda.current_stream(), and the host offsets (cu) only feed the launcher's checks; the
kernels read cu_seqlens on the device."""

from __future__ import annotations

import contextlib
from collections import Counter

import torch

from kcv import _glr
from kcv.glr import _keep
from kcv.glr._native import from_np, np64, ptr
from kcv.glr._precision import CUDA_CORE, TENSOR_CORE, chunk_path

#: Launches by ("forward" | "backward", "reference" | "cuda_core" | "tensor_core" | "decode" |
#: "oracle"), counted when an op runs (not on a CUDA graph's replay).
PATHS = Counter()
#: Tensor-core backwards by where the forward's pieces came from: "kept" (a keeping forward) or
#: "recomputed", counted like PATHS.
BACKWARD_PIECES = Counter()


def _host_offsets(dims, cu):
    if cu is not None:
        return cu
    return [b * dims.T for b in range(dims.B + 1)] if dims.B > 1 else []


def state_shape_of(dims, v_first):
    return (dims.N, dims.HV, dims.V, dims.K) if v_first else (dims.N, dims.HV, dims.K, dims.V)


def state_dtype(q):
    """The final state's dtype: float64 from the CPU path with float64 inputs, else float32 (the
    CUDA kernels keep the state in float32)."""
    return torch.float64 if q.dtype == torch.float64 and not q.is_cuda else torch.float32


def _path(member, mode, dims, grade, q, beta):
    if not q.is_cuda:
        return "reference" if mode == "chunk" else "oracle"
    return chunk_path(member, dims.K, dims.V, q.dtype, None if beta is None else beta.dtype,
                      q.device.type, grade)


def _device_of(q):
    """q's CUDA device made current for the call (the launches, the kernels' shared-memory
    attributes and the stream are per device: a tensor on cuda:1 while cuda:0 is current would
    launch on the wrong one); nothing on the CPU."""
    return torch.cuda.device(q.device) if q.is_cuda else contextlib.nullcontext()


def forward(member, mode, dims, cu, scale, v_first, chunk_size, want_state, decode_kernel, grade,
            keep, q, k, v, g, beta, h0, cu_seqlens):
    """(o, final state or None, kept or None): kept is the tensor-core forward's kept part
    (uint8) when `keep` (a policy of _keep.py) keeps it for the backward."""
    with _device_of(q):
        return _forward(member, mode, dims, cu, scale, v_first, chunk_size, want_state,
                        decode_kernel, grade, keep, q, k, v, g, beta, h0, cu_seqlens)


def backward(member, mode, dims, cu, scale, v_first, chunk_size, grade, q, k, v, g, beta, h0,
             cu_seqlens, d_o, d_ht, kept=None):
    """(dq, dk, dv, dg, dbeta, dh0), each in its input's dtype, None where the input is None.
    kept: what forward returned as kept on the same inputs, or None (the backward recomputes)."""
    with _device_of(q):
        return _backward(member, mode, dims, cu, scale, v_first, chunk_size, grade, q, k, v, g,
                         beta, h0, cu_seqlens, d_o, d_ht, kept)


def kept_shape(member, mode, dims, grade, keep, q, beta, varlen):
    """The shape of forward's kept part: (bytes,) when the call keeps one, else None. The same
    decision for the real op and its fake (meta) implementation."""
    if keep == "never" or q.device.type != "cuda" or mode != "chunk":
        return None
    if _path(member, mode, dims, grade, q, beta) != TENSOR_CORE:
        return None
    gdims = _mma_dims(dims, varlen)
    return (_keep.kept_bytes(member, gdims),) if _keep.keeps(keep, member, gdims,
                                                             q.device) else None


def _forward(member, mode, dims, cu, scale, v_first, chunk_size, want_state, decode_kernel, grade,
             keep, q, k, v, g, beta, h0, cu_seqlens):
    state_shape = state_shape_of(dims, v_first)
    path = "decode" if q.is_cuda and decode_kernel else _path(member, mode, dims, grade, q, beta)
    PATHS["forward", path] += 1
    if path == TENSOR_CORE:
        shape = kept_shape(member, mode, dims, grade, keep, q, beta, cu_seqlens is not None)
        return _mma_forward(member, dims, cu, scale, v_first, want_state, shape, q, k, v, g, beta,
                            h0, cu_seqlens, state_shape)
    if not q.is_cuda:
        fwd = _glr.ref_forward if mode == "chunk" else _glr.oracle_forward
        h0x = None if h0 is None else h0.detach()
        o64, ht64 = fwd(member, (dims.B * dims.T, dims.H, dims.HV, dims.K, dims.V),
                        _host_offsets(dims, cu), np64(q), np64(k), np64(v), np64(g), np64(beta),
                        np64(h0x), scale, v_first, chunk_size)
        o = from_np(o64, (dims.B, dims.T, dims.HV, dims.V), q.dtype, q.device)
        ht = from_np(ht64, state_shape, state_dtype(q), q.device) if want_state else None
        return o, ht, None
    if decode_kernel:
        o, ht = _decode_cuda(member, dims, cu, scale, v_first, q, k, v, g, beta, h0, cu_seqlens,
                             state_shape)
        return o, (ht if want_state else None), None
    return _chunk_cuda(member, dims, cu, scale, v_first, want_state, q, k, v, g, beta, h0,
                       cu_seqlens, state_shape) + (None,)


def _backward(member, mode, dims, cu, scale, v_first, chunk_size, grade, q, k, v, g, beta, h0,
              cu_seqlens, d_o, d_ht, kept):
    path = _path(member, mode, dims, grade, q, beta)
    PATHS["backward", path] += 1
    if path == TENSOR_CORE:
        grads = _mma_backward(member, dims, cu, scale, v_first, q, k, v, g, beta, h0, cu_seqlens,
                              d_o, d_ht, kept)
    elif path == CUDA_CORE:
        grads = _chunk_cuda_backward(member, dims, cu, scale, v_first, q, k, v, g, beta, h0,
                                     cu_seqlens, d_o, d_ht)
    else:
        bwd = _glr.ref_backward if mode == "chunk" else _glr.oracle_backward
        raw = bwd(member, (dims.B * dims.T, dims.H, dims.HV, dims.K, dims.V),
                  _host_offsets(dims, cu), np64(q), np64(k), np64(v), np64(g), np64(beta),
                  np64(h0), scale, v_first, np64(d_o), np64(d_ht), chunk_size)
        grads = [None if t is None else from_np(a, t.shape, t.dtype, t.device)
                 for a, t in zip(raw, (q, k, v, g, beta, h0))]
    dq, dk, dv, dg, db, dh0 = grads
    if dh0 is not None:
        dh0 = dh0.to(h0.dtype)
    return dq, dk, dv, dg, db, dh0


def _gpu_cfg(g, beta, cu_seqlens):
    """(gate fp32?, beta fp32?, cu_seqlens int32?) as the chunk launchers take them."""
    return (g is not None and g.dtype == torch.float32,
            beta is not None and beta.dtype == torch.float32,
            cu_seqlens is not None and cu_seqlens.dtype == torch.int32)


def _gpu_inputs(q, k, v, g, beta, h0f, cu_seqlens):
    return (q.data_ptr(), k.data_ptr(), v.data_ptr(), ptr(g), ptr(beta), ptr(h0f),
            ptr(cu_seqlens))


def _gate_beta_for_kernels(g, beta):
    """The chunk kernels take g and beta in float32 or bfloat16."""
    ok = (torch.float32, torch.bfloat16)
    g = g if g is None or g.dtype in ok else g.float().contiguous()
    beta = beta if beta is None or beta.dtype in ok else beta.float().contiguous()
    return g, beta


def _chunk_cuda(member, dims, cu, scale, v_first, want_state, q, k, v, g, beta, h0, cu_seqlens,
                state_shape):
    g, beta = _gate_beta_for_kernels(g, beta)
    h0f = None if h0 is None else h0.to(torch.float32).contiguous()
    o = torch.empty((dims.B, dims.T, dims.HV, dims.V), dtype=q.dtype, device=q.device)
    ht = torch.empty(state_shape, dtype=torch.float32, device=q.device) if want_state else None
    cfg = (scale, v_first) + _gpu_cfg(g, beta, cu_seqlens)
    gdims = dims.gpu(cu is not None)
    nbytes = _glr.gpu_workspace_bytes(False, member, gdims, *cfg)
    ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _glr.gpu_forward(member, gdims, *cfg, _gpu_inputs(q, k, v, g, beta, h0f, cu_seqlens),
                     cu or [], o.data_ptr(), ptr(ht), ws.data_ptr(), nbytes, stream)
    return o, ht


def _chunk_cuda_backward(member, dims, cu, scale, v_first, q, k, v, g, beta, h0, cu_seqlens,
                         d_o, d_ht):
    g_in, beta_in = g, beta
    g, beta = _gate_beta_for_kernels(g, beta)
    h0f = None if h0 is None else h0.to(torch.float32).contiguous()
    d_o = d_o.to(q.dtype).contiguous()
    d_ht = None if d_ht is None else d_ht.to(torch.float32).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    dg = None if g is None else torch.empty_like(g)
    db = None if beta is None else torch.empty_like(beta)
    dh0 = None if h0f is None else torch.empty_like(h0f)
    cfg = (scale, v_first) + _gpu_cfg(g, beta, cu_seqlens)
    gdims = dims.gpu(cu is not None)
    nbytes = _glr.gpu_workspace_bytes(True, member, gdims, *cfg)
    ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _glr.gpu_backward(member, gdims, *cfg, _gpu_inputs(q, k, v, g, beta, h0f, cu_seqlens),
                      cu or [], d_o.data_ptr(), ptr(d_ht),
                      (dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), ptr(dg), ptr(db), ptr(dh0)),
                      ws.data_ptr(), nbytes, stream)
    dg = None if dg is None else dg.to(g_in.dtype)
    db = None if db is None else db.to(beta_in.dtype)
    return dq, dk, dv, dg, db, dh0


def _decode_cuda(member, dims, cu, scale, v_first, q, k, v, g, beta, h0, cu_seqlens,
                 state_shape):
    f32 = lambda t: None if t is None else t.to(torch.float32).contiguous()  # noqa: E731
    q32, k32, v32, g32, b32 = f32(q), f32(k), f32(v), f32(g), f32(beta)
    state = (h0.to(torch.float32).clone().contiguous() if h0 is not None
             else torch.zeros(state_shape, dtype=torch.float32, device=q.device))
    cu64 = None if cu_seqlens is None else cu_seqlens.to(torch.int64).contiguous()
    o32 = torch.empty((dims.B, dims.T, dims.HV, dims.V), dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _glr.gpu_decode(member, dims.gpu(cu is not None), scale, v_first,
                    (q32.data_ptr(), k32.data_ptr(), v32.data_ptr(), ptr(g32), ptr(b32),
                     ptr(cu64)), o32.data_ptr(), state.data_ptr(), stream)
    return o32.to(q.dtype), state


# ------------------------------------------------------------------ the tensor-core kernels


def _aligned(t):
    """t, or a copy of it when its data is not 16-byte aligned (a view at an odd offset): the
    tensor-core kernels read their tensors in 16-byte pieces."""
    return t if t is None or t.data_ptr() % 16 == 0 else t.clone()


def _mma_call(dims, cu, q, k, v, g, beta, h0, cu_seqlens):
    """(launcher dims, host offsets, inputs) of the tensor-core kernels, as glr/check/mma_call.hpp
    drives them: a batch of B > 1 sequences becomes B packed sequences with explicit int64 offsets
    (made on the device, no host read); q, k, v, β bf16 (chunk_path sent only bf16 ones here),
    g and h0 fp32; each contiguous and 16-byte aligned."""
    f32 = lambda t: None if t is None else _aligned(t.to(torch.float32).contiguous())  # noqa: E731
    gdims = _mma_dims(dims, cu_seqlens is not None)
    if cu_seqlens is not None:
        cu64 = _aligned(cu_seqlens.to(torch.int64).contiguous())
    elif dims.B > 1:
        cu64 = torch.arange(0, dims.B * dims.T + 1, dims.T, dtype=torch.int64, device=q.device)
        cu = _host_offsets(dims, None)
    else:
        cu64 = None
    x = (_aligned(q), _aligned(k), _aligned(v), f32(g), _aligned(beta), f32(h0), cu64)
    return gdims, cu or [], x


def _mma_dims(dims, varlen):
    """The tensor-core launcher's dims: a batch of B > 1 sequences runs as B packed ones."""
    if not varlen and dims.B > 1:
        return (1, dims.B * dims.T, dims.H, dims.HV, dims.K, dims.V, dims.B)
    return dims.gpu(varlen)


def _multiprocessors(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _mma_forward(member, dims, cu, scale, v_first, want_state, kept_shape, q, k, v, g, beta, h0,
                 cu_seqlens, state_shape):
    """(o, final state or None, kept or None); kept_shape: the kept part's, or None to run the
    forward alone in a workspace of its own."""
    gdims, cu, x = _mma_call(dims, cu, q, k, v, g, beta, h0, cu_seqlens)
    o = torch.empty((dims.B, dims.T, dims.HV, dims.V), dtype=torch.bfloat16, device=q.device)
    ht = torch.empty(state_shape, dtype=torch.float32, device=q.device) if want_state else None
    keep = kept_shape is not None
    nbytes = kept_shape[0] if keep else _glr.mma_workspace_bytes(_glr.MmaWorkspace.FORWARD,
                                                                 member, gdims)
    ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _glr.mma_forward(member, gdims, scale, v_first, tuple(ptr(t) for t in x), cu,
                     o.data_ptr(), ptr(ht), ws.data_ptr(), nbytes, keep,
                     _multiprocessors(q.device), stream)
    return o, ht, (ws if keep else None)


def _mma_backward(member, dims, cu, scale, v_first, q, k, v, g, beta, h0, cu_seqlens, d_o, d_ht,
                  kept):
    """kept: the kept part a keeping forward left (the backward starts at its dH scan), or None
    (the backward recomputes the forward's pieces into a kept part of its own)."""
    gdims, cu, x = _mma_call(dims, cu, q, k, v, g, beta, h0, cu_seqlens)
    d_o = _aligned(d_o.to(torch.bfloat16).contiguous())
    d_ht = None if d_ht is None else _aligned(d_ht.to(torch.float32).contiguous())
    dq, dk, dv = torch.empty_like(x[0]), torch.empty_like(x[1]), torch.empty_like(x[2])
    dg = None if g is None else torch.empty_like(x[3])
    db = None if beta is None else torch.empty_like(x[4])
    dh0 = None if h0 is None else torch.empty_like(x[5])
    recompute = kept is None
    BACKWARD_PIECES["recomputed" if recompute else "kept"] += 1
    if recompute:
        kept = torch.empty(max(_keep.kept_bytes(member, gdims), 1), dtype=torch.uint8,
                           device=q.device)
    nscratch = _glr.mma_workspace_bytes(_glr.MmaWorkspace.SCRATCH, member, gdims)
    scratch = torch.empty(max(nscratch, 1), dtype=torch.uint8, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _glr.mma_backward(member, gdims, scale, v_first, tuple(ptr(t) for t in x), cu,
                      d_o.data_ptr(), ptr(d_ht),
                      (dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), ptr(dg), ptr(db), ptr(dh0)),
                      kept.data_ptr(), kept.numel(), scratch.data_ptr(), nscratch, recompute,
                      _multiprocessors(q.device), stream)
    dg = None if dg is None else dg.to(g.dtype)
    db = None if beta is None else db.to(beta.dtype)
    return dq, dk, dv, dg, db, dh0
