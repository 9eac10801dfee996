"""The `reference` backend of the training recipe: the five recurrences in plain PyTorch, float32,
chunked, differentiated by autograd, with fla's op signatures for the arguments fla's layers pass
on the training path.

Why this and not kcv's CPU reference cast to fp32: kcv's reference is fp64 code on the host
(kcv._glr), so a GPU training run through it would copy every layer's q/k/v to the CPU and back
and take hours; and it is kcv's own code, so it would not be an independent third run. This file
shares no code with kcv's kernels nor with fla's Triton kernels; it takes fla's definitions of the
in-kernel prologue from fla's own torch references (naive_gdn_gate, naive_kda_gate, and l2norm as
x·rsqrt(Σx² + 1e-6)). Autocast is off inside, so every product is a float32 one (torch's default
float32 matmul precision, "highest", is IEEE float32, no TF32); o is returned in v's dtype.

The recurrence, per sequence and head, with state S [K, V], decay a_t (1, a scalar, or a vector
over K), and for the delta rule β_t:
    S'_t = diag(a_t) S_{t-1}
    S_t  = S'_t + k_t v_t^T                              (LA, SSD / simple GLA, GLA)
    S_t  = S'_t + β_t k_t (v_t − S'_t^T k_t)^T           (GDN, KDA)
    o_t  = S_t^T (scale · q_t)
Chunked form: within a chunk of C tokens let Γ_t be the running sum of log a (so every decay
factor used is exp(Γ_t − Γ_s) ≤ 1 for s ≤ t, computed pairwise: no division by a cumulative decay,
nothing overflows). With the chunk's start state S_0, U = (I + M)^{-1} diag(β) (V − (K ⊙ e^Γ) S_0),
M_ts = β_t k_t^T diag(e^{Γ_t − Γ_s}) k_s for s < t (unit lower triangular solve; U = V without the
delta rule); then o_t = (q_t ⊙ e^{Γ_t})^T S_0 + Σ_{s ≤ t} q_t^T diag(e^{Γ_t − Γ_s}) k_s u_s and
S_C = diag(e^{Γ_C}) S_0 + Σ_s diag(e^{Γ_C − Γ_s}) k_s u_s^T. All chunks' intra-chunk terms are
computed at once; only the state is carried chunk to chunk. A vector decay needs the [C, C, K]
pairwise factors, so chunks are 16 tokens there and 64 otherwise.

The training path only: initial_state, output_final_state, cu_seqlens and normalize=True raise
NotImplementedError, as does every fused_recurrent op (eval at q_len <= 64)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from fla.ops.gated_delta_rule.gate import naive_gdn_gate
from fla.ops.kda.gate import naive_kda_gate, naive_kda_lowerbound_gate

L2NORM_EPS = 1e-6
SCALAR_GATE_CHUNK, VECTOR_GATE_CHUNK = 64, 16


def recurrence(q, k, v, log_decay=None, beta=None, scale=None, chunk=None):
    """o [B, T, H, V] of the recurrence above. q, k [B, T, H, K]; v [B, T, H, V]; log_decay None,
    [B, T, H] or [B, T, H, K] (log a_t ≤ 0); beta None (no delta rule) or [B, T, H]. Works in
    float64 for float64 q, else float32; o comes back in v's dtype."""
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    vector_gate = log_decay is not None and log_decay.dim() == 4
    C = chunk or (VECTOR_GATE_CHUNK if vector_gate else SCALAR_GATE_CHUNK)
    B, T, H, K = q.shape
    out_dtype = v.dtype
    scale = K ** -0.5 if scale is None else scale
    pad = -T % C

    def chunked(x):  # [B, T, H, ...] -> [B, H, N, C, ...] in the work dtype, zero-padded
        x = x.to(work).transpose(1, 2)
        x = F.pad(x, (0, 0) * (x.dim() - 3) + (0, pad))
        return x.reshape(B, H, -1, C, *x.shape[3:])

    with torch.autocast(q.device.type, enabled=False):
        q, k, v = chunked(q) * scale, chunked(k), chunked(v)
        ones = torch.ones(C, C, dtype=torch.bool, device=q.device)
        causal, strict = ones.tril(), ones.tril(-1)
        if log_decay is None:
            gamma = torch.zeros_like(q[..., 0])
            pair = causal.to(work)  # [C, C]
        else:
            gamma = chunked(log_decay).cumsum(3)  # [B, H, N, C] or [B, H, N, C, K]
        if vector_gate:
            diff = gamma.unsqueeze(-2) - gamma.unsqueeze(-3)  # [B, H, N, C(t), C(s), K]
            pair = torch.where(causal[..., None], diff, -torch.inf).exp()
            a_qk = torch.einsum("bhntk,bhnsk,bhntsk->bhnts", q, k, pair)
            q_decayed, k_to_end = q * gamma.exp(), k * (gamma[..., -1:, :] - gamma).exp()
            chunk_decay = gamma[..., -1, :].exp().unsqueeze(-1)  # [B, H, N, K, 1]
        else:
            if log_decay is not None:
                diff = gamma.unsqueeze(-1) - gamma.unsqueeze(-2)
                pair = torch.where(causal, diff, -torch.inf).exp()  # [B, H, N, C, C]
            a_qk = (q @ k.transpose(-1, -2)) * pair
            q_decayed = q * gamma.exp().unsqueeze(-1)
            k_to_end = k * (gamma[..., -1:] - gamma).exp().unsqueeze(-1)
            chunk_decay = gamma[..., -1].exp()[..., None, None]  # [B, H, N, 1, 1]
        if beta is not None:
            b = chunked(beta).unsqueeze(-1)  # [B, H, N, C, 1]
            if vector_gate:
                m = torch.einsum("bhntk,bhnsk,bhntsk->bhnts", k, k, pair)
            else:
                m = (k @ k.transpose(-1, -2)) * pair
            t_mat = torch.eye(C, dtype=work, device=q.device) + b * m * strict
            w_v = torch.linalg.solve_triangular(t_mat, b * v, upper=False, unitriangular=True)
            k_gamma = k * (gamma.exp() if vector_gate else gamma.exp().unsqueeze(-1))
            w_k = torch.linalg.solve_triangular(t_mat, b * k_gamma, upper=False,
                                                unitriangular=True)
        S = q.new_zeros(B, H, K, v.shape[-1])
        out = []
        for n in range(q.shape[2]):
            u = v[:, :, n] if beta is None else w_v[:, :, n] - w_k[:, :, n] @ S
            out.append(q_decayed[:, :, n] @ S + a_qk[:, :, n] @ u)
            S = chunk_decay[:, :, n] * S + k_to_end[:, :, n].transpose(-1, -2) @ u
        o = torch.stack(out, 2).reshape(B, H, -1, v.shape[-1])[:, :, :T]
    return o.transpose(1, 2).to(out_dtype)


# ------------------------------------------------------------------ fla's op signatures

def _training_path_only(initial_state=None, output_final_state=False, cu_seqlens=None,
                        normalize=False, **ignored):
    """Refuses what this backend does not run; `ignored` holds layout and kernel-choice options
    (state_v_first, safe_gate, chunk_size, ...) that change no output on this path."""
    for name, value in (("initial_state", initial_state), ("cu_seqlens", cu_seqlens)):
        if value is not None:
            raise NotImplementedError(f"reference backend: {name} is not supported")
    if output_final_state or normalize:
        raise NotImplementedError("reference backend: output_final_state / normalize=True "
                                  "are not supported")


def _l2norm(x):
    xf = x.float() if x.dtype != torch.float64 else x
    return xf * torch.rsqrt(xf.square().sum(-1, keepdim=True) + L2NORM_EPS)


def _prologue(q, k, beta, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
              allow_neg_eigval):
    if use_qk_l2norm_in_kernel:
        q, k = _l2norm(q), _l2norm(k)
    if beta is not None and use_beta_sigmoid_in_kernel:
        beta = beta.float().sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    return q, k, beta


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, use_qk_l2norm_in_kernel=False,
                           use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           use_gate_in_kernel=False, A_log=None, dt_bias=None, **kwargs):
    _training_path_only(**kwargs)
    if use_gate_in_kernel:
        g = naive_gdn_gate(g, A_log, dt_bias)
    q, k, beta = _prologue(q, k, beta, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                           allow_neg_eigval)
    return recurrence(q, k, v, g, beta, scale), None


def chunk_kda(q, k, v, g=None, beta=None, scale=None, A_log=None, dt_bias=None,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
              use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, lower_bound=None,
              **kwargs):
    _training_path_only(**kwargs)
    if use_gate_in_kernel:
        g = (naive_kda_gate(g, A_log, dt_bias) if lower_bound is None
             else naive_kda_lowerbound_gate(g, A_log, dt_bias, lower_bound))
    q, k, beta = _prologue(q, k, beta, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                           allow_neg_eigval)
    return recurrence(q, k, v, g, beta, scale), None


def chunk_gla(q, k, v, g=None, scale=None, **kwargs):
    _training_path_only(**kwargs)
    return recurrence(q, k, v, g, None, scale), None


def chunk_simple_gla(q, k, v, g=None, scale=None, **kwargs):
    _training_path_only(**kwargs)
    return recurrence(q, k, v, g, None, scale), None


def chunk_linear_attn(q, k, v, scale=None, **kwargs):
    _training_path_only(**kwargs)
    return recurrence(q, k, v, None, None, scale), None


def _no_decode(*args, **kwargs):
    raise NotImplementedError("reference backend: the training path only (no fused_recurrent)")


#: op name in fla's layer modules -> the reference implementation.
OPS = {
    "chunk_gated_delta_rule": chunk_gated_delta_rule, "chunk_kda": chunk_kda,
    "chunk_gla": chunk_gla, "chunk_simple_gla": chunk_simple_gla,
    "chunk_linear_attn": chunk_linear_attn,
    "fused_recurrent_gated_delta_rule": _no_decode, "fused_recurrent_kda": _no_decode,
    "fused_recurrent_gla": _no_decode, "fused_recurrent_simple_gla": _no_decode,
    "fused_recurrent_linear_attn": _no_decode, "fused_chunk_gla": _no_decode,
    "fused_chunk_linear_attn": _no_decode,
}
