"""The general gated delta recurrence token by token in float64 torch, differentiated by autograd:
the NaN-propagation oracle of gates_vs_fla.py (EXC-01). The chunked fp64 reference is not one:
its intra-chunk products reach a NaN at token t* from every earlier token of t*'s chunk (0 * NaN
is NaN), while the recurrence itself poisons o only from t* on. Token-serial evaluation has no
such products, so its NaN mask is the one the recurrence defines.

    S_t = (I - beta_t k_t k_t^T) D_t S_{t-1} + beta_t k_t v_t^T     (state [K, V] per value head)
    o_t = scale * S_t^T q_t

D_t = exp(g_t) (a scalar, or a diagonal per key channel), beta_t = 1 without the delta rule (the
erase term dropped). GVA: value head hv reads q/k head hv // (HV / H). Same argument layout as
kcv.glr: q, k [1, T, H, K]; v [1, T, HV, V]; g [1, T, HV] or [1, T, HV, K]; beta [1, T, HV];
h0 [N, HV, K, V]; cu_seqlens a list of N + 1 offsets (B = 1), or B > 1 without it.
"""

import torch


def forward(q, k, v, g, beta, h0, cu, scale):
    """(o [B, T, HV, V], ht [N, HV, K, V]) as differentiable float64 tensors."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    heads = torch.arange(HV) // (HV // H)
    spans = [(b, 0, T) for b in range(B)] if not cu else \
        [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]
    rows, states = [], []
    for n, (b, lo, hi) in enumerate(spans):
        S = h0[n] if h0 is not None else torch.zeros(HV, K, V, dtype=q.dtype)
        outs = []
        for t in range(lo, hi):
            kt, qt, vt = k[b, t][heads], q[b, t][heads], v[b, t]  # [HV, K], [HV, K], [HV, V]
            if g is not None:
                a = g[b, t].exp()
                S = S * (a[:, None, None] if a.dim() == 1 else a[:, :, None])
            if beta is not None:
                delta = beta[b, t][:, None] * (vt - torch.einsum("hk,hkv->hv", kt, S))
            else:
                delta = vt
            S = S + kt[:, :, None] * delta[:, None, :]
            outs.append(scale * torch.einsum("hk,hkv->hv", qt, S))
        rows.append((b, torch.stack(outs)))
        states.append(S)
    if cu:
        o = torch.cat([r for _, r in rows])[None]
    else:
        o = torch.stack([r for _, r in rows])
    return o, torch.stack(states)


def fwd_bwd(x, cu=None, scale=None):
    """Forward and backward on CPU float64 copies of the inputs dict of glr_cases.make_inputs;
    returns o, ht and the gradients under the names fwd_bwd of glr_cases uses."""
    names = ("q", "k", "v", "g", "beta", "h0")
    y = {n: (None if x[n] is None else x[n].detach().double().cpu().clone().requires_grad_())
         for n in names}
    scale = y["q"].shape[-1] ** -0.5 if scale is None else scale
    o, ht = forward(y["q"], y["k"], y["v"], y["g"], y["beta"], y["h0"],
                    None if cu is None else [int(c) for c in cu], scale)
    torch.autograd.backward((o, ht), (x["do"].double().cpu(), x["dht"].double().cpu()))
    out = {"o": o.detach(), "ht": ht.detach()}
    for n, gname in (("q", "dq"), ("k", "dk"), ("v", "dv"), ("g", "dg"), ("beta", "dbeta"),
                     ("h0", "dh0")):
        if y[n] is not None:
            out[gname] = y[n].grad.detach()
    return out
