"""Tests of kcv.glr's Python front on the CPU path: argument validation errors that name the
argument, forward/backward against the fp64 chunked reference in kcv._glr (itself checked against
the token-serial oracle in C++), and autograd consistency on float64 (torch.autograd.gradcheck).
Skipped when torch is not installed."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
glr = pytest.importorskip("kcv.glr")

MEMBERS = ["gdn", "kda", "gla", "ssd", "la"]


def make(member, B=1, T=37, H=2, HV=2, K=8, V=6, dtype=torch.float64, seed=0, h0=True, N=None):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dtype)  # noqa: E731
    q = torch.nn.functional.normalize(r(B, T, H, K), dim=-1)
    k = torch.nn.functional.normalize(r(B, T, H, K), dim=-1)
    v = r(B, T, HV, V)
    g = beta = None
    if member in ("gdn", "ssd"):
        g = torch.nn.functional.logsigmoid(r(B, T, HV)) / 4
    if member in ("kda", "gla"):
        g = torch.nn.functional.logsigmoid(r(B, T, HV, K)) / 4
    if member in ("gdn", "kda"):
        beta = torch.sigmoid(r(B, T, HV))
    n = N if N is not None else B
    s0 = r(n, HV, K, V) * 0.1 if h0 else None
    return q, k, v, g, beta, s0


def call(member, q, k, v, g, beta, s0, **kw):
    if member == "gdn":
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=s0, **kw)
    if member == "kda":
        return glr.chunk_kda(q, k, v, g, beta, initial_state=s0, **kw)
    if member == "gla":
        return glr.chunk_gla(q, k, v, g, initial_state=s0, **kw)
    if member == "ssd":
        return glr.chunk_simple_gla(q, k, v, g=g, initial_state=s0, **kw)
    return glr.chunk_linear_attn(q, k, v, initial_state=s0, normalize=False, **kw)


def naive(member, q, k, v, g, beta, s0, scale):
    """Token-serial float64 recurrence written in torch (an independent oracle)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    grp = HV // H
    # Lists of per-head states and per-token outputs: no in-place writes, so autograd can
    # differentiate through this loop.
    S = [s0[:, hv] if s0 is not None else torch.zeros(B, K, V, dtype=q.dtype) for hv in range(HV)]
    outs = []
    for t in range(T):
        o_t = []
        for hv in range(HV):
            h = hv // grp
            qt, kt, vt = q[:, t, h], k[:, t, h], v[:, t, hv]
            St = S[hv]
            if g is not None:
                decay = g[:, t, hv].exp()
                St = St * (decay[:, None, None] if g.dim() == 3 else decay[:, :, None])
            if beta is not None:
                b = beta[:, t, hv][:, None]
                delta = b * (vt - torch.einsum("bk,bkv->bv", kt, St))
            else:
                delta = vt
            St = St + kt[:, :, None] * delta[:, None, :]
            S[hv] = St
            o_t.append(scale * torch.einsum("bk,bkv->bv", qt, St))
        outs.append(torch.stack(o_t, dim=1))
    return torch.stack(outs, dim=1), torch.stack(S, dim=1)


@pytest.mark.parametrize("member", MEMBERS)
def test_forward_matches_naive(member):
    q, k, v, g, beta, s0 = make(member, B=2, T=70, H=1, HV=2)
    o, ht = call(member, q, k, v, g, beta, s0, output_final_state=True)
    o_ref, s_ref = naive(member, q, k, v, g, beta, s0, 8 ** -0.5)
    assert torch.allclose(o, o_ref, rtol=1e-9, atol=1e-10)
    assert torch.allclose(ht, s_ref, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("member", MEMBERS)
def test_backward_matches_autograd_of_naive(member):
    inputs = make(member, T=40, H=1, HV=2)
    mine = [t.clone().requires_grad_() if t is not None else None for t in inputs]
    theirs = [t.clone().requires_grad_() if t is not None else None for t in inputs]
    o, ht = call(member, *mine, output_final_state=True)
    o2, s2 = naive(member, *theirs, 8 ** -0.5)
    gen = torch.Generator().manual_seed(1)
    do = torch.randn(o.shape, generator=gen, dtype=o.dtype)
    dht = torch.randn(ht.shape, generator=gen, dtype=ht.dtype)
    torch.autograd.backward((o, ht), (do, dht))
    torch.autograd.backward((o2, s2), (do, dht))
    for name, a, b in zip("q k v g beta h0".split(), mine, theirs):
        if a is None:
            continue
        assert torch.allclose(a.grad, b.grad, rtol=1e-8, atol=1e-9), name


@pytest.mark.parametrize("member", MEMBERS)
def test_varlen_equals_separate_calls(member):
    cu = torch.tensor([0, 5, 70, 81], dtype=torch.int64)
    q, k, v, g, beta, s0 = make(member, T=81, N=3)
    o, ht = call(member, q, k, v, g, beta, s0, output_final_state=True, cu_seqlens=cu)
    for n in range(3):
        a, b = int(cu[n]), int(cu[n + 1])
        sl = lambda t: None if t is None else t[:, a:b].contiguous()  # noqa: E731
        o_n, h_n = call(member, sl(q), sl(k), sl(v), sl(g), sl(beta), s0[n:n + 1],
                        output_final_state=True)
        assert torch.allclose(o[:, a:b], o_n, rtol=1e-10, atol=1e-12)
        assert torch.allclose(ht[n:n + 1], h_n, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("member", MEMBERS)
def test_gradcheck(member):
    inputs = make(member, T=20, H=1, HV=1, K=4, V=3)
    leaves = [t.clone().requires_grad_() for t in inputs if t is not None]

    def f(*ts):
        it = iter(ts)
        args = [next(it) if t is not None else None for t in inputs]
        o, ht = call(member, *args, output_final_state=True)
        return o, ht

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_float32_cpu_casts_back():
    q, k, v, g, beta, s0 = make("gdn", dtype=torch.float32)
    o, ht = call("gdn", q, k, v, g, beta, s0, output_final_state=True)
    assert o.dtype == torch.float32 and ht.dtype == torch.float32
    o2, none = call("gdn", q, k, v, g, beta, s0)
    assert none is None and torch.equal(o, o2)


def test_state_v_first_is_a_transpose():
    q, k, v, g, beta, s0 = make("gdn")
    _, ht = call("gdn", q, k, v, g, beta, s0, output_final_state=True)
    _, ht_vk = call("gdn", q, k, v, g, beta, s0.transpose(-1, -2).contiguous(),
                    output_final_state=True, state_v_first=True)
    assert torch.allclose(ht, ht_vk.transpose(-1, -2), rtol=1e-12, atol=1e-14)


def expect(exc, argname, fn):
    with pytest.raises(exc) as info:
        fn()
    assert argname in str(info.value), str(info.value)


def test_validation_errors_name_the_argument():
    q, k, v, g, beta, s0 = make("gdn", B=1, T=16)
    f = glr.chunk_gated_delta_rule
    expect(ValueError, "k", lambda: f(q, k[:, :8].contiguous(), v, g, beta))
    expect(ValueError, "g", lambda: f(q, k, v, g[:, :, :1].contiguous(), beta))
    expect(ValueError, "beta", lambda: f(q, k, v, g, beta[:, :8].contiguous()))
    expect(ValueError, "initial_state", lambda: f(q, k, v, g, beta, initial_state=s0[:, :1]))
    big = torch.zeros(1, 16, 2, 257, dtype=q.dtype)
    expect(ValueError, "q", lambda: f(big, big, v, g, beta))
    expect(ValueError, "v", lambda: f(q, k, torch.zeros(1, 16, 2, 300, dtype=q.dtype), g, beta))
    # a [B, H, T, K] layout passed as q: the shapes the other arguments must have follow q's
    expect(ValueError, "k", lambda: f(q.transpose(1, 2), k, v, g, beta))
    expect(TypeError, "k", lambda: f(q, k.float(), v, g, beta))
    expect(TypeError, "v", lambda: f(q, k, v.float(), g, beta))
    cu_bad = torch.tensor([0, 9, 4, 16])
    expect(ValueError, "cu_seqlens", lambda: f(q, k, v, g, beta, cu_seqlens=cu_bad))
    expect(ValueError, "cu_seqlens", lambda: f(q, k, v, g, beta, cu_seqlens=torch.tensor([0, 15])))
    q2, k2, v2, g2, b2, _ = make("gdn", B=2, T=16)
    expect(ValueError, "cu_seqlens",
           lambda: f(q2, k2, v2, g2, b2, cu_seqlens=torch.tensor([0, 8, 16])))
    expect(ValueError, "v", lambda: f(q, k, torch.zeros(1, 16, 3, 6, dtype=q.dtype), g, beta))
    expect(TypeError, "bogus", lambda: f(q, k, v, g, beta, bogus=1))


def test_reference_entry_points_directly():
    from kcv import _glr
    T, H, K, V = 9, 1, 4, 3
    rng = np.random.default_rng(0)
    r = rng.standard_normal
    o, ht = _glr.ref_forward(0, (T, H, H, K, V), [], r(T * K), r(T * K), r(T * V), None, None,
                             None, 0.5, False)
    assert o.shape == (T * V,) and ht.shape == (K * V,)
    o2, ht2 = _glr.oracle_forward(0, (T, H, H, K, V), [], r(T * K), r(T * K), r(T * V), None,
                                  None, None, 0.5, False)
    assert o2.shape == (T * V,) and ht2.shape == (K * V,)
    with pytest.raises(ValueError, match="chunk"):
        _glr.ref_forward(0, (T, H, H, K, V), [], r(T * K), r(T * K), r(T * V), None, None,
                         None, 0.5, False, 24)
    with pytest.raises(ValueError):
        _glr.ref_forward(0, (T, H, H, K, V), [], r(T * K), r(T * K - 1), r(T * V), None, None,
                         None, 0.5, False)


@pytest.mark.parametrize("member", ["gdn", "ssd"])
def test_the_backward_fills_no_zero_gradient_for_outputs_that_got_none(member):
    """Only o gets a gradient: autograd must not build zero tensors for the final state and the
    forward's kept pieces (on CUDA the kept buffer is hundreds of MB: a fill every step), and the
    gradients must equal those of a call that passes zeros for the state explicitly."""
    from torch.profiler import ProfilerActivity, profile

    q, k, v, g, beta, s0 = make(member)
    leaves = [t.requires_grad_() for t in (q, k, v, g, beta, s0) if t is not None]
    o, ht = call(member, q, k, v, g, beta, s0, output_final_state=True)
    do = torch.randn_like(o)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        grads = torch.autograd.grad(o, leaves, do)
    made = [e.name for e in prof.events() if e.name in ("aten::zeros", "aten::zeros_like")]
    assert made == [], made
    o2, ht2 = call(member, q, k, v, g, beta, s0, output_final_state=True)
    want = torch.autograd.grad((o2, ht2), leaves, (do, torch.zeros_like(ht2)))
    for a, b in zip(grads, want):
        assert torch.equal(a, b)
