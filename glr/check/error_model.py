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


def tau(ref, name, *, L, K, V, G, cu=None):
    """tau of every element of output `name` (its fp64 oracle value `ref`), float64 CPU tensor.
    L: the longest sequence of the case."""
    n = L + K + V + CHUNK
    scale = 2.0 * slice_rms(ref, name, cu)
    r = ref.detach().double().cpu()
    mag = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
    return U[OUT_DTYPE[name]] * mag + C_CONF * U_F32 * (math.sqrt(n) + G) * scale


def describe(L, K, V, G):
    """One line for the report: the numbers of the model for a case."""
    n = L + K + V + CHUNK
    return (f"N={n}, sqrt(N)={math.sqrt(n):.1f}, G={G:.2f}: accumulation term "
            f"{C_CONF * U_F32 * (math.sqrt(n) + G) * 2:.2e} x RMS(slice)")
