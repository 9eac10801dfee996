"""kcv.glr's fla 0.6 surface on the CPU: every argument the ops take beyond the recurrence itself
(fused gates, l2norm, β sigmoid, chunk_size, cu_seqlens_cpu, transpose_state_layout, KDA's graph
options, normalize), the decode ops against the chunk ops (both fp64: the token-serial oracle
against the chunked reference), dtypes, K = V = 256, and the errors that name their argument.
CUDA-only checks at the end skip without a GPU."""

import warnings

import pytest

torch = pytest.importorskip("torch")
glr = pytest.importorskip("kcv.glr")

from test_glr import make, naive  # noqa: E402

F = torch.nn.functional
MEMBERS = ["gdn", "kda", "gla", "ssd", "la", "deltanet"]
# fp64 chunked reference vs fp64 token-serial oracle: both sum O(T·K) terms of size O(1).
FP64_TOL = 1e-10


def inputs(member, **kw):
    base = "gdn" if member == "deltanet" else member
    q, k, v, g, beta, s0 = make(base, **kw)
    if member == "deltanet":
        g = None
    return q, k, v, g, beta, s0


def chunk(member, q, k, v, g, beta, s0, **kw):
    if member == "gdn":
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=s0, **kw)
    if member == "kda":
        return glr.chunk_kda(q, k, v, g, beta, initial_state=s0, **kw)
    if member == "deltanet":
        return glr.chunk_delta_rule(q, k, v, beta, initial_state=s0, **kw)
    if member == "gla":
        return glr.chunk_gla(q, k, v, g, initial_state=s0, **kw)
    if member == "ssd":
        return glr.chunk_simple_gla(q, k, v, g=g, initial_state=s0, **kw)
    return glr.chunk_linear_attn(q, k, v, initial_state=s0, normalize=False, **kw)


def decode(member, q, k, v, g, beta, s0, **kw):
    if member == "gdn":
        return glr.fused_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, initial_state=s0,
                                                    **kw)
    if member == "kda":
        return glr.fused_recurrent_kda(q, k, v, g, beta, initial_state=s0, **kw)
    if member == "deltanet":
        return glr.fused_recurrent_delta_rule(q, k, v, beta, initial_state=s0, **kw)
    if member == "gla":
        return glr.fused_recurrent_gla(q, k, v, gk=g, initial_state=s0, **kw)
    if member == "ssd":
        return glr.fused_recurrent_simple_gla(q, k, v, g=g, initial_state=s0, **kw)
    return glr.fused_recurrent_linear_attn(q, k, v, initial_state=s0, **kw)


def expect(exc, argname, fn):
    with pytest.raises(exc) as info:
        fn()
    assert argname in str(info.value), str(info.value)


def close(a, b, tol=FP64_TOL):
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ decode path

@pytest.mark.parametrize("member", MEMBERS)
@pytest.mark.parametrize("T,with_h0", [(1, True), (3, False), (5, True)])
def test_decode_matches_chunk(member, T, with_h0):
    q, k, v, g, beta, s0 = inputs(member, B=2, T=T, H=1, HV=2, h0=with_h0)
    o, ht = decode(member, q, k, v, g, beta, s0, output_final_state=True)
    o2, ht2 = chunk(member, q, k, v, g, beta, s0, output_final_state=True)
    close(o, o2)
    close(ht, ht2)


@pytest.mark.parametrize("member", MEMBERS)
def test_decode_token_by_token_carries_the_state(member):
    q, k, v, g, beta, s0 = inputs(member, B=1, T=6, H=1, HV=2)
    o_all, h_all = chunk(member, q, k, v, g, beta, s0, output_final_state=True)
    state, outs = s0, []
    for t in range(6):
        sl = lambda x: None if x is None else x[:, t:t + 1].contiguous()  # noqa: E731
        o_t, state = decode(member, sl(q), sl(k), sl(v), sl(g), sl(beta), state.to(q.dtype),
                            output_final_state=True)
        outs.append(o_t)
    close(torch.cat(outs, 1), o_all)
    close(state, h_all)


@pytest.mark.parametrize("member", MEMBERS)
def test_decode_varlen_and_state_v_first(member):
    cu = torch.tensor([0, 1, 3, 6])
    q, k, v, g, beta, s0 = inputs(member, B=1, T=6, H=1, HV=2, N=3)
    kw = dict(cu_seqlens=cu, output_final_state=True)
    if member not in ("deltanet", "la"):  # fla's delta_rule / linear_attn have no state_v_first
        kw["state_v_first"] = True
        s0 = s0.transpose(-1, -2).contiguous()
    o, ht = decode(member, q, k, v, g, beta, s0, **kw)
    o2, ht2 = chunk(member, q, k, v, g, beta, s0, **kw)
    close(o, o2)
    close(ht, ht2)


@pytest.mark.parametrize("member", MEMBERS)
def test_decode_backward_matches_chunk_backward(member):
    mine = [t.clone().requires_grad_() if t is not None else None
            for t in inputs(member, T=4, H=1, HV=2)]
    theirs = [t.detach().clone().requires_grad_() if t is not None else None for t in mine]
    o, ht = decode(member, *mine, output_final_state=True)
    o2, ht2 = chunk(member, *theirs, output_final_state=True)
    torch.autograd.backward((o, ht), (torch.ones_like(o), torch.ones_like(ht)))
    torch.autograd.backward((o2, ht2), (torch.ones_like(o2), torch.ones_like(ht2)))
    for a, b in zip(mine, theirs):
        if a is not None:
            close(a.grad, b.grad)


def test_fused_recurrent_gdn_gate_kinds():
    q, k, v, g, beta, s0 = inputs("kda", T=3)
    f = glr.fused_recurrent_gated_delta_rule
    close(f(q, k, v, gk=g, beta=beta, initial_state=s0)[0],
          glr.fused_recurrent_kda(q, k, v, g, beta, initial_state=s0)[0])
    close(f(q, k, v, beta=beta)[0], glr.fused_recurrent_delta_rule(q, k, v, beta)[0])
    close(f(q, k, v)[0], glr.fused_recurrent_delta_rule(q, k, v, torch.ones(v.shape[:3],
                                                                              dtype=q.dtype))[0])
    assert glr.fused_recurrent_gdn is f and glr.chunk_gdn is glr.chunk_gated_delta_rule
    expect(NotImplementedError, "gv", lambda: f(q, k, v, gv=v, beta=beta))
    expect(NotImplementedError, "gk", lambda: f(q, k, v, g=g[..., 0], gk=g, beta=beta))
    expect(NotImplementedError, "reverse", lambda: glr.fused_recurrent_gla(q, k, v, gk=g,
                                                                           reverse=True))
    expect(NotImplementedError, "gv", lambda: glr.fused_recurrent_gla(q, k, v, gv=v))


# ------------------------------------------------------------------------------ new arguments

def test_l2norm_is_flas_definition():
    x = torch.randn(3, 5, 8, dtype=torch.float64) * 1e-4  # small norms: where eps matters
    want = x * torch.rsqrt(x.square().sum(-1, keepdim=True) + 1e-6)
    close(glr.l2norm(x), want, 1e-15)
    assert not torch.allclose(glr.l2norm(x), F.normalize(x, dim=-1))
    q, k, v, g, beta, s0 = inputs("gdn")
    close(glr.chunk_gdn(q, k, v, g, beta, use_qk_l2norm_in_kernel=True)[0],
          glr.chunk_gdn(glr.l2norm(q), glr.l2norm(k), v, g, beta)[0])


def test_beta_sigmoid_and_negative_eigenvalues():
    q, k, v, g, beta, s0 = inputs("kda")
    for op in (glr.chunk_kda, glr.chunk_gated_delta_rule):
        gg = g if op is glr.chunk_kda else g[..., 0].contiguous()
        close(op(q, k, v, gg, beta, use_beta_sigmoid_in_kernel=True)[0],
              op(q, k, v, gg, beta.sigmoid())[0])
        close(op(q, k, v, gg, beta, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)[0],
              op(q, k, v, gg, 2 * beta.sigmoid())[0])
        expect(ValueError, "allow_neg_eigval", lambda: op(q, k, v, gg, beta,
                                                          allow_neg_eigval=True))


def test_gdn_fused_gate():
    q, k, v, g, beta, s0 = inputs("gdn", HV=2)
    A_log, dt_bias = torch.randn(2, dtype=torch.float64), torch.randn(2, dtype=torch.float64)
    raw = torch.randn(g.shape, dtype=torch.float64)
    want = -A_log.exp() * F.softplus(raw + dt_bias)
    for op in (glr.chunk_gated_delta_rule, glr.fused_recurrent_gated_delta_rule):
        got = op(q, k, v, g=raw, beta=beta, use_gate_in_kernel=True, A_log=A_log,
                 dt_bias=dt_bias)[0]
        close(got, op(q, k, v, g=want, beta=beta)[0])
        expect(ValueError, "A_log", lambda: op(q, k, v, g=raw, beta=beta,
                                               use_gate_in_kernel=True))
        expect(ValueError, "dt_bias", lambda: op(q, k, v, g=raw, beta=beta,
                                                 use_gate_in_kernel=True, A_log=A_log,
                                                 dt_bias=torch.zeros(3, dtype=torch.float64)))
    # gradients reach A_log and dt_bias
    leaves = [raw.clone().requires_grad_(), A_log.clone().requires_grad_(),
              dt_bias.clone().requires_grad_()]
    small = [t[:, :6].contiguous() for t in (q, k, v, beta)]
    assert torch.autograd.gradcheck(
        lambda r, a, d: glr.chunk_gdn(small[0], small[1], small[2], r[:, :6].contiguous(),
                                      small[3], use_gate_in_kernel=True, A_log=a, dt_bias=d)[0],
        leaves, eps=1e-6, atol=1e-6)


def test_kda_fused_gate_and_lower_bound():
    q, k, v, g, beta, s0 = inputs("kda", HV=2, K=8)
    raw = torch.randn(g.shape, dtype=torch.float64)
    A_log, dt_bias = torch.randn(2, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    soft = -A_log.exp()[:, None] * F.softplus(raw + dt_bias.view(2, 8))
    bounded = -3.0 * torch.sigmoid(A_log.exp()[:, None] * (raw + dt_bias.view(2, 8)))
    plain = -3.0 * torch.sigmoid(raw + dt_bias.view(2, 8))
    for op in (glr.chunk_kda, glr.fused_recurrent_kda):
        run = lambda **kw: op(q, k, v, raw, beta, use_gate_in_kernel=True, **kw)[0]  # noqa: E731
        close(run(A_log=A_log, dt_bias=dt_bias), op(q, k, v, soft, beta)[0])
        close(run(A_log=A_log, dt_bias=dt_bias, lower_bound=-3.0), op(q, k, v, bounded, beta)[0])
        close(run(dt_bias=dt_bias, lower_bound=-3.0), op(q, k, v, plain, beta)[0])
        expect(ValueError, "A_log", lambda: run(dt_bias=dt_bias))
        expect(ValueError, "lower_bound", lambda: run(A_log=A_log, lower_bound=2.0))
    expect(ValueError, "lower_bound", lambda: glr.chunk_kda(
        q, k, v, raw, beta, use_gate_in_kernel=True, safe_gate=True, A_log=A_log))
    expect(ValueError, "lower_bound", lambda: glr.chunk_kda(
        q, k, v, raw, beta, use_gate_in_kernel=True, safe_gate=True, A_log=A_log,
        lower_bound=-6.0))


@pytest.mark.parametrize("member,sizes", [("gdn", (16, 32, 64)), ("kda", (32, 64)),
                                          ("deltanet", (16, 32, 64)), ("ssd", (16, 128, 8))])
def test_chunk_size_changes_rounding_only(member, sizes):
    q, k, v, g, beta, s0 = inputs(member, T=70)
    want = chunk(member, q, k, v, g, beta, s0)[0]
    for c in sizes:
        close(chunk(member, q, k, v, g, beta, s0, chunk_size=c)[0], want)
    expect(ValueError, "chunk_size", lambda: chunk(member, q, k, v, g, beta, s0, chunk_size=48))
    expect(TypeError, "chunk_size", lambda: chunk(member, q, k, v, g, beta, s0, chunk_size="64"))


@pytest.mark.parametrize("member", ["gdn", "kda", "gla", "ssd"])
def test_transpose_state_layout_is_state_v_first(member):
    q, k, v, g, beta, s0 = inputs(member)
    s_vk = s0.transpose(-1, -2).contiguous()
    want = chunk(member, q, k, v, g, beta, s_vk, state_v_first=True, output_final_state=True)
    if member == "gla":  # fla's chunk_gla has no **kwargs: a TypeError there and here
        expect(TypeError, "transpose_state_layout", lambda: chunk(
            member, q, k, v, g, beta, s_vk, transpose_state_layout=True))
        return
    with pytest.warns(DeprecationWarning):
        got = chunk(member, q, k, v, g, beta, s_vk, transpose_state_layout=True,
                    output_final_state=True)
    close(got[0], want[0])
    close(got[1], want[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect(ValueError, "transpose_state_layout", lambda: chunk(
            member, q, k, v, g, beta, s_vk, state_v_first=True, transpose_state_layout=True))


def test_cu_seqlens_cpu():
    cu = torch.tensor([0, 5, 20])
    q, k, v, g, beta, s0 = inputs("gdn", T=20, N=2)
    f = glr.chunk_gated_delta_rule
    close(f(q, k, v, g, beta, cu_seqlens=cu, cu_seqlens_cpu=cu.clone())[0],
          f(q, k, v, g, beta, cu_seqlens=cu)[0])
    expect(ValueError, "cu_seqlens_cpu", lambda: f(q, k, v, g, beta, cu_seqlens=cu,
                                                   cu_seqlens_cpu=cu[:2]))
    expect(ValueError, "cu_seqlens_cpu", lambda: f(q, k, v, g, beta, cu_seqlens_cpu=cu))


@pytest.mark.parametrize("member", MEMBERS)
def test_strided_views_run_as_their_contiguous_copies(member):
    """fla's input guard makes every tensor argument contiguous; so does kcv.glr (v, g and the
    initial state here are transposed views), and the gradients reach the views."""
    q, k, v, g, beta, s0 = inputs(member)

    def view(t):  # the same values, laid out with the first dimension fastest
        return None if t is None else t.transpose(0, -1).contiguous().transpose(0, -1)

    vq, vk, vv, vg, vb, vs = (view(t) for t in (q, k, v, g, beta, s0))
    assert not vv.is_contiguous() and not vs.is_contiguous()
    for t in (vq, vk, vv):
        t.requires_grad_(True)
    o_view, _ = chunk(member, vq, vk, vv, vg, vb, vs)
    o_dense, _ = chunk(member, q, k, v, g, beta, s0)
    close(o_view, o_dense, tol=0.0)
    o_view.sum().backward()
    assert all(t.grad is not None and t.grad.shape == t.shape for t in (vq, vk, vv))


def test_refused_options_raise_not_implemented():
    q, k, v, g, beta, s0 = inputs("kda")
    f = glr.chunk_kda
    expect(NotImplementedError, "use_graph", lambda: f(q, k, v, g, beta, use_graph=True))
    expect(NotImplementedError, "return_intermediate_states",
           lambda: f(q, k, v, g, beta, return_intermediate_states=True))
    expect(NotImplementedError, "cp_context", lambda: f(q, k, v, g, beta, cp_context=object()))
    close(f(q, k, v, g, beta, max_num_seqs=4, safe_gate=True, disable_recompute=True)[0],
          f(q, k, v, g, beta)[0])
    expect(ValueError, "head_first", lambda: f(q, k, v, g, beta, head_first=False))
    expect(TypeError, "bogus", lambda: glr.fused_recurrent_kda(q, k, v, g, beta, bogus=1))
    expect(TypeError, "scale", lambda: f(q, k, v, g, beta, scale="x"))


def test_simple_gla_g_gamma():
    q, k, v, g, beta, s0 = inputs("ssd", HV=2)
    gamma = torch.tensor([-0.1, -0.3], dtype=torch.float64)
    full = gamma.expand(*g.shape).contiguous()
    for op in (glr.chunk_simple_gla, glr.fused_recurrent_simple_gla):
        close(op(q, k, v, g_gamma=gamma)[0], op(q, k, v, g=full)[0])
        expect(ValueError, "g_gamma", lambda: op(q, k, v, g=full, g_gamma=gamma))
        expect(ValueError, "g_gamma", lambda: op(q, k, v, g_gamma=gamma[:1]))


# ------------------------------------------------------------------ normalized linear attention

def test_linear_attn_normalize_is_flas_running_key_sum():
    q, k, v, _, _, s0 = inputs("la", T=9)
    scale = 8 ** -0.5
    o, (ht, z) = glr.chunk_linear_attn(q, k, v, output_final_state=True)
    raw, _ = glr.chunk_linear_attn(q, k, v, normalize=False)
    denom = (q * scale * k.cumsum(1)).sum(-1, keepdim=True) + 1e-10
    close(o, raw / denom)
    close(z, k.cumsum(1)[:, -1:])
    # chaining: two calls carrying (kv_state, z_state) equal one call
    o1, st = glr.chunk_linear_attn(q[:, :4], k[:, :4], v[:, :4], output_final_state=True)
    o2, _ = glr.fused_recurrent_linear_attn(q[:, 4:], k[:, 4:], v[:, 4:], initial_state=st,
                                            normalize=True)
    close(torch.cat([o1, o2], 1), o)
    o_none, (h_none, _) = glr.chunk_linear_attn(q, k, v)
    assert h_none is None
    expect(ValueError, "initial_state", lambda: glr.chunk_linear_attn(
        q, k, v, initial_state=(ht, z[:, :, :, :2])))


# ------------------------------------------------------------------ dtypes and head dims

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("mode", ["chunk", "decode"])
def test_low_precision_inputs_round_once(dtype, mode):
    q, k, v, g, beta, s0 = inputs("gdn", T=20, dtype=dtype)
    op = chunk if mode == "chunk" else decode
    o, ht = op("gdn", q, k, v, g, beta, s0, output_final_state=True)
    assert o.dtype == dtype and ht.dtype == torch.float32
    up = [t.to(torch.float64) for t in (q, k, v, g, beta, s0)]
    o64, _ = op("gdn", *up, output_final_state=True)
    # the inputs are exact in fp64, so the only error is o's one rounding to dtype
    torch.testing.assert_close(o, o64.to(dtype), rtol=0, atol=0)


def test_head_dims_up_to_256_on_cpu():
    q, k, v, g, beta, s0 = inputs("kda", T=3, H=1, HV=1, K=256, V=256)
    o, ht = decode("kda", q, k, v, g, beta, s0, output_final_state=True)
    o2, ht2 = chunk("kda", q, k, v, g, beta, s0, output_final_state=True)
    ref_o, ref_s = naive("kda", q, k, v, g, beta, s0, 256 ** -0.5)
    close(o, ref_o)
    close(o2, ref_o)
    close(ht, ref_s)
    big = torch.zeros(1, 3, 1, 257, dtype=torch.float64)
    expect(ValueError, "q", lambda: glr.fused_recurrent_kda(big, big, v, big, beta))


# ------------------------------------------------------------------ CUDA (skipped without a GPU)

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and glr.has_cuda()),
                          reason="needs a GPU and kcv._glr built with the CUDA kernels")


@cuda
@pytest.mark.parametrize("member", MEMBERS)
def test_cuda_decode_kernel_matches_oracle(member):
    cpu = inputs(member, B=1, T=7, H=1, HV=2, K=160, V=96, dtype=torch.float32, N=3)
    cu = torch.tensor([0, 1, 4, 7])
    dev = [None if t is None else t.cuda() for t in cpu]
    with torch.no_grad():
        o, ht = decode(member, *dev, cu_seqlens=cu.cuda(), output_final_state=True)
    o_ref, ht_ref = decode(member, *[None if t is None else t.double() for t in cpu],
                           cu_seqlens=cu, output_final_state=True)
    tol = 4 * 7 * 160 * torch.finfo(torch.float32).eps
    torch.testing.assert_close(o.cpu().double(), o_ref, rtol=tol, atol=tol)
    torch.testing.assert_close(ht.cpu().double(), ht_ref, rtol=tol, atol=tol)


@cuda
def test_cuda_chunk_limits_are_refused():
    q, k, v, g, beta, s0 = [t.cuda() for t in inputs("gdn", dtype=torch.float16)]
    expect(NotImplementedError, "bfloat16", lambda: glr.chunk_gdn(q, k, v, g, beta))
    big = torch.zeros(1, 4, 2, 192, dtype=torch.bfloat16, device="cuda")
    expect(NotImplementedError, "K=192", lambda: glr.chunk_gdn(big, big, v[:, :4].bfloat16(),
                                                               g[:, :4], beta[:, :4]))
