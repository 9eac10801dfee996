"""The error model (tau) that gates_vs_fla.py gives kcv's numeric judges for the GLR kernels.

kcv's judges accept an output element when |y_hat - y*| <= tau, y* the fp64 result on the SAME
bf16/fp32 inputs (input rounding is shared, so it is not part of tau). The kernels read bf16
q, k, v (beta bf16, g and h0 fp32), do all arithmetic in fp32 and round each output once, to its
dtype (o, dq, dk, dv, dbeta bf16; ht, dh0, dg fp32). Following kcv's model (include/kcv/
tolerance.hpp: tau = u_out*|y*| + c*u_acc*sqrt(N)*S):

  tau_i = u_out * |y*_i|                              final rounding to the output dtype
        + c * u_f32 * (sqrt(N) + G) * S_slice           fp32 arithmetic of the chunk form

- u_out: unit roundoff of the output dtype (bf16 2^-8, fp32 2^-24); kcv's comparison floors it
  at half an ulp of the output dtype at y*.
- c = 4: kcv's confidence constant of the probabilistic (random-walk) bound.
- N = L + K + V + C: the longest chain of fp32 accumulations an element depends on: the L tokens
  of its sequence summed into the state (intra-chunk C = 64, then across chunks), the K-channel
  contractions (q.S, k.S) and the V-channel ones (the backward's dv.v-like products), and the
  C x C intra-chunk matrices. Rounding errors of independent sign add as a random walk:
  sqrt(N) * u_f32 per unit of magnitude.
- G: the largest |chunk-local cumulative log-decay| of the case (0 without a gate). The decay
  factors exp(G_i - G_j) come from fp32 differences of those cumulative sums, each with an
  absolute error up to u_f32 * |G|, i.e. a relative error u_f32 * G in every decayed term.
- S_slice: the magnitude of the summed terms, kcv's S = ||p||_2 + |sum p|. For sums of terms of
  random sign both are about the RMS of the result, so S = 2 * RMS(y*) over the element's slice
  (one sequence and one head: the elements that share one state recurrence).

dg (added after the H200 run of docs/glr/verification.md, ssd varlen-d128-gva): dg is a sum
whose terms cancel, so S = 2 RMS(slice) underestimates it. With G_s the cumulative log-decay
from the sequence start, the inputs enter L only as q_s e^{G_s}, k_s e^{-G_s} (scalar gate with
the delta rule: v_s e^{-G_s}, since k also sits in the gauge-invariant erase I - b k k^T) and the
final state e^{G_T}(...), hence dL/dG_s = q_s.dq_s - k_s.dk_s (resp. - v_s.dv_s), per value
head. The chunk form sums, for dg_t with t in a chunk whose last valid token is e,

  dg_t = sum_{s=t..e} (q_s . dq_s - k_s . dk_s) + <S_e, dS_e>_F

(S_e the state after e, dS_e = dL/dS_e through the tokens after e; dht at a sequence end): up
to 64 rows of K products plus K x V boundary products, each far larger than dg_t when they
cancel, and in a short sequence the slice RMS is that of 1-3 values. So for dg
S_i = max(2 RMS(slice), ||p||_2 + |sum p|) over exactly these terms p (per channel for a
per-channel gate), computed in fp64 from the reference (dq, dk, dv of each VALUE head, i.e. before
GVA's group sum) and a token-serial fp64 pass for S_e, dS_e (dg_terms). sum p = dg* for ssd,
gla and gdn (checked to 1e-13); for kda (per-channel gate + delta rule) the k-form is a proxy of
the kernel's terms of the same size, not an identity. The max keeps every other tau as before.
dbeta also sums row-minus-column terms, but it is rounded to bf16: the 2^-8 |y*| term dominates
unless the terms exceeded |dbeta| by ~400x, so its model is unchanged.

Nothing here looks at the candidate's output; the constants are fixed before any run.
"""

import math

import torch

U = {"bf16": 2.0 ** -8, "f32": 2.0 ** -24, "f64": 2.0 ** -53}
U_F32 = U["f32"]
C_CONF = 4.0
CHUNK = 64
OUT_DTYPE = {"o": "bf16", "dq": "bf16", "dk": "bf16", "dv": "bf16", "dbeta": "bf16",
             "ht": "f32", "dh0": "f32", "dg": "f32"}
STATE_OUTPUTS = ("ht", "dh0")  # [N, HV, K, V]; the rest are per token [B, T, heads, ...]


def max_chunk_log_decay(g, cu=None):
    """G: the largest |cumulative sum of g| within any 64-token chunk of any sequence (0 when g
    is None). g [B, T, HV] or [B, T, HV, K]."""
    if g is None:
        return 0.0
    g = g.detach().double().cpu()
    B, T = g.shape[0], g.shape[1]
    spans = [(b, 0, T) for b in range(B)] if cu is None else \
        [(0, int(cu[n]), int(cu[n + 1])) for n in range(len(cu) - 1)]
    worst = 0.0
    for b, lo, hi in spans:
        for c0 in range(lo, hi, CHUNK):
            part = g[b, c0:min(c0 + CHUNK, hi)].cumsum(0)
            worst = max(worst, float(part.abs().max()))
    return worst


def slice_rms(ref, name, cu=None):
    """RMS of |ref| over each slice (sequence x head), broadcast back to ref's shape. NaN/Inf
    elements of ref are left out of the RMS (the NaN probe's oracle has them)."""
    r = ref.detach().double().cpu()
    finite = torch.isfinite(r)
    sq = torch.where(finite, r * r, torch.zeros_like(r))
    out = torch.empty_like(r)
    if name in STATE_OUTPUTS:  # [N, HV, K, V]: slice = (sequence, head)
        dims = tuple(range(2, r.dim()))
        num = sq.sum(dim=dims, keepdim=True)
        cnt = finite.sum(dim=dims, keepdim=True).clamp(min=1)
        return (num / cnt).sqrt().expand_as(r).clone()
    # [B, T, heads, ...]: slice = (sequence of the batch or of cu_seqlens, head)
    B, T = r.shape[0], r.shape[1]
    spans = [(b, 0, T) for b in range(B)] if cu is None else \
        [(0, int(cu[n]), int(cu[n + 1])) for n in range(len(cu) - 1)]
    extra = tuple(range(3, r.dim()))
    for b, lo, hi in spans:
        s, f = sq[b, lo:hi], finite[b, lo:hi]
        num = s.sum(dim=(0,) + tuple(d - 1 for d in extra), keepdim=True)
        cnt = f.sum(dim=(0,) + tuple(d - 1 for d in extra), keepdim=True).clamp(min=1)
        out[b, lo:hi] = (num / cnt).sqrt().expand_as(s)
    return out


def tau(ref, name, *, L, K, V, G, cu=None, terms=None):
    """tau of every element of output `name` (its fp64 oracle value `ref`), float64 CPU tensor.
    L: the longest sequence of the case. terms (dg only): the S of dg_terms; S is then the larger
    of it and 2 RMS(slice) (non-finite terms fall back to the latter)."""
    n = L + K + V + CHUNK
    scale = 2.0 * slice_rms(ref, name, cu)
    if terms is not None:
        if name != "dg":
            raise ValueError(f"terms: only for dg, not {name}")
        t = terms.detach().double().cpu()
        scale = torch.where(torch.isfinite(t), torch.maximum(scale, t), scale)
    r = ref.detach().double().cpu()
    mag = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
    return U[OUT_DTYPE[name]] * mag + C_CONF * U_F32 * (math.sqrt(n) + G) * scale


def describe(L, K, V, G):
    """One line for the report: the numbers of the model for a case."""
    n = L + K + V + CHUNK
    return (f"N={n}, sqrt(N)={math.sqrt(n):.1f}, G={G:.2f}: accumulation term "
            f"{C_CONF * U_F32 * (math.sqrt(n) + G) * 2:.2e} x RMS(slice)")


# ------------------------------------------------------------------ dg: S from the summed terms


def _spans(B, T, cu):
    return [(b, 0, T) for b in range(B)] if cu is None else \
        [(0, int(cu[n]), int(cu[n + 1])) for n in range(len(cu) - 1)]


def chunk_boundary_terms(x, cu=None, scale=None, dtype=torch.float64):
    """For every token t: the products S_e ⊙ dS_e of the chunk containing t (e its last valid
    token), S_e the state after e and dS_e = dL/dS_e through the later tokens only (dht at a
    sequence end), token-serial in `dtype` (float64; the tests also use float32). Returns (sum,
    sum of squares), each [B, T, HV] for a scalar gate, [B, T, HV, K] for a per-channel gate
    (summed over V, and over K when scalar)."""
    f = {n: (None if x[n] is None else x[n].detach().to(dtype).cpu()) for n in x}
    q, k, v, g, beta, do = f["q"], f["k"], f["v"], f["g"], f["beta"], f["do"]
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    heads = torch.arange(HV) // (HV // H)
    channel = g is not None and g.dim() == 4
    shape = (B, T, HV, K) if channel else (B, T, HV)
    tot, sq = torch.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)
    for n, (b, lo, hi) in enumerate(_spans(B, T, cu)):
        S = f["h0"][n].clone() if f["h0"] is not None else torch.zeros(HV, K, V, dtype=dtype)
        ends = list(range(min(lo + CHUNK, hi) - 1, hi, CHUNK))
        if ends[-1] != hi - 1:
            ends.append(hi - 1)
        states = {}
        for t in range(lo, hi):  # forward: the states at the chunk ends
            kt, vt = k[b, t][heads], v[b, t]
            if g is not None:
                a = g[b, t].exp()
                S = S * (a[:, :, None] if channel else a[:, None, None])
            delta = vt if beta is None else \
                beta[b, t][:, None] * (vt - torch.einsum("hk,hkv->hv", kt, S))
            S = S + kt[:, :, None] * delta[:, None, :]
            if t in ends:
                states[t] = S.clone()
        dS = f["dht"][n].clone() if f["dht"] is not None else torch.zeros_like(S)
        for t in range(hi - 1, lo - 1, -1):  # backward: dS is dL/dS_t through tokens > t
            if t in states:
                p = states[t] * dS
                c0 = lo + (t - lo) // CHUNK * CHUNK
                s_, q_ = p.sum(-1), (p * p).sum(-1)  # [HV, K]
                if not channel:
                    s_, q_ = s_.sum(-1), q_.sum(-1)
                tot[b, c0:t + 1], sq[b, c0:t + 1] = s_, q_
            kt = k[b, t][heads]
            dS = dS + scale * q[b, t][heads][:, :, None] * do[b, t][:, None, :]
            if beta is not None:
                dS = dS - beta[b, t][:, None, None] * kt[:, :, None] * \
                    torch.einsum("hk,hkv->hv", kt, dS)[:, None, :]
            if g is not None:
                a = g[b, t].exp()
                dS = dS * (a[:, :, None] if channel else a[:, None, None])
    return tot, sq


def per_head_grads(member, x, cu=None):
    """dq, dk, dv of every VALUE head ([B, T, HV, K]; before GVA's group sum) from the fp64
    chunked reference, run on q, k repeated to the value heads."""
    import glr_cases as gc
    f = {n: (None if x[n] is None else x[n].detach().double().cpu()) for n in x}
    H, HV = f["q"].shape[2], f["v"].shape[2]
    heads = torch.arange(HV) // (HV // H)
    f["q"], f["k"] = f["q"][:, :, heads].contiguous(), f["k"][:, :, heads].contiguous()
    cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int64)
    y = gc.fwd_bwd(gc.kcv_ops(), member, f, cu_t)
    return y["dq"], y["dk"], y["dv"]


def chunk_revcumsum(r, B, T, cu):
    """Reverse cumulative sum along tokens within each 64-token chunk of each sequence."""
    out = torch.empty_like(r)
    for b, lo, hi in _spans(B, T, cu):
        for c0 in range(lo, hi, CHUNK):
            c1 = min(c0 + CHUNK, hi)
            out[b, c0:c1] = r[b, c0:c1].flip(0).cumsum(0).flip(0)
    return out


def dg_terms(member, x, cu=None, scale=None):
    """(S, sum p) of every dg element: S = ||p||_2 + |sum p| over the terms p that the chunk form
    sums into it (module docstring, 'dg'). Float64 CPU tensors shaped like dg."""
    f = {n: (None if x[n] is None else x[n].detach().double().cpu()) for n in x}
    B, T, H, K = f["q"].shape
    HV = f["v"].shape[2]
    heads = torch.arange(HV) // (HV // H)
    dq, dk, dv = per_head_grads(member, x, cu)
    q, k = f["q"][:, :, heads], f["k"][:, :, heads]
    a = q * dq
    if f["beta"] is not None and f["g"].dim() == 3:  # scalar gate + delta rule: v carries G
        rest = f["v"] * dv
    else:
        rest = k * dk
    channel = f["g"].dim() == 4
    if channel:
        row_sum, row_sq = a - rest, a * a + rest * rest
    else:
        row_sum = a.sum(-1) - rest.sum(-1)
        row_sq = (a * a).sum(-1) + (rest * rest).sum(-1)
    b_sum, b_sq = chunk_boundary_terms(x, cu, scale)
    total = chunk_revcumsum(row_sum, B, T, cu) + b_sum
    norm = (chunk_revcumsum(row_sq, B, T, cu) + b_sq).sqrt()
    return norm + total.abs(), total
