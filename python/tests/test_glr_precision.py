"""The precision grade of kcv.glr's chunk ops (decision 0006, docs/glr/fla-api.md).

CPU: which kernels a call takes (kcv.glr._precision.chunk_path, a pure function of the call's
member, head dims, dtypes, device and grade); the `precision` keyword and set_precision's
validation (ValueError naming the allowed grades); that the CPU path runs the fp64 reference under
both grades (bit-identical outputs and gradients); that the grade crosses into the custom ops as a
static argument (opcheck, and a torch.compile graph that holds it and recompiles when the default
changes); the keep policy's validation and its crossing into the forward op (set_keep_forward);
the error model's forward_bounds / backward_bounds bindings the GPU tests judge with.

CUDA (skipped without a GPU and kcv._glr built with the kernels): under precision="bf16" the
tensor-core kernels of glr/dev run (kcv.glr._launch.PATHS) for GDN, SSD, LA and DeltaNet at
K = V = 128, batched and packed (cu_seqlens), with [K, V] and [V, K] states, and their outputs
and gradients lie within the bf16 grade's bound of the fp64 chunked reference
(kcv._glr.forward_bounds / backward_bounds); the fp32 grade and the calls the tensor-core kernels
do not take stay on the CUDA-core kernels; a forward that keeps its pieces gives the recomputing
backward's bits (kcv.glr._launch.BACKWARD_PIECES); a captured CUDA graph and torch.compile equal
eager under "bf16"."""

import pytest

torch = pytest.importorskip("torch")
glr = pytest.importorskip("kcv.glr")

from kcv import _glr  # noqa: E402
from kcv.glr import _launch, _precision  # noqa: E402
from kcv.glr._native import DELTANET, GDN, GLA, KDA, LA, SSD  # noqa: E402
from kcv.glr._precision import CUDA_CORE, REFERENCE, TENSOR_CORE, chunk_path  # noqa: E402
from test_glr_api import chunk, inputs  # noqa: E402
from test_glr_graph import assert_compiled_step_equals_eager  # noqa: E402

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
CHUNK_MEMBERS = ["gdn", "kda", "gla", "ssd", "la", "deltanet"]


@pytest.fixture(autouse=True)
def _restore_default():
    previous, keep = glr.get_precision(), glr.get_keep_forward()
    yield
    glr.set_precision(previous)
    glr.set_keep_forward(keep)


# ------------------------------------------------------------------ the dispatch decision


@pytest.mark.parametrize("member", [LA, SSD, DELTANET, GDN, GLA, KDA])
def test_bf16_grade_takes_the_tensor_core_kernels_where_they_apply(member):
    beta = BF16 if member in (DELTANET, GDN, KDA) else None
    assert chunk_path(member, 128, 128, BF16, beta, "cuda", "bf16") == TENSOR_CORE
    # the fp32 grade never does
    assert chunk_path(member, 128, 128, BF16, beta, "cuda", "fp32") == CUDA_CORE


@pytest.mark.parametrize("member", [LA, SSD, DELTANET, GDN, GLA, KDA])
@pytest.mark.parametrize("K,V", [(64, 128), (128, 64), (64, 64), (32, 128), (128, 256)])
def test_head_dims_other_than_128_take_the_cuda_core_kernels(member, K, V):
    beta = BF16 if member in (DELTANET, GDN, KDA) else None
    assert chunk_path(member, K, V, BF16, beta, "cuda", "bf16") == CUDA_CORE


@pytest.mark.parametrize("q_dtype", [F16, F32, torch.float64])
def test_other_q_dtypes_are_not_the_tensor_core_path(q_dtype):
    # (the CUDA chunk kernels refuse them in validation; the decision never picks tensor cores)
    assert chunk_path(GDN, 128, 128, q_dtype, BF16, "cuda", "bf16") == CUDA_CORE


@pytest.mark.parametrize("beta_dtype", [F32, F16, torch.float64])
def test_beta_other_than_bf16_keeps_the_cuda_core_kernels(beta_dtype):
    # the tensor-core kernels read β in bf16; rounding an fp32 β is not a declared rounding
    for member in (DELTANET, GDN):
        assert chunk_path(member, 128, 128, BF16, beta_dtype, "cuda", "bf16") == CUDA_CORE


@pytest.mark.parametrize("member", [LA, SSD, GLA, DELTANET, GDN, KDA])
@pytest.mark.parametrize("grade", ["fp32", "bf16"])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_non_cuda_devices_take_the_reference(member, grade, device):
    assert chunk_path(member, 128, 128, BF16, BF16, device, grade) == REFERENCE


def test_chunk_path_rejects_an_unknown_grade():
    with pytest.raises(ValueError, match="grade"):
        chunk_path(GDN, 128, 128, BF16, BF16, "cuda", "tf32")


# ------------------------------------------------------------------ keyword and default


@pytest.mark.parametrize("bad", ["sometimes", "", None, True, 1])
def test_set_keep_forward_rejects_bad_values_naming_the_policies(bad):
    with pytest.raises(ValueError, match="'auto', 'always', 'never'"):
        glr.set_keep_forward(bad)
    assert glr.get_keep_forward() == "auto"
    assert glr.set_keep_forward("never") == "auto" and glr.get_keep_forward() == "never"


def test_keep_policy_crosses_into_the_forward_op_and_keeps_nothing_off_the_tensor_cores():
    # the CPU reference keeps nothing under any policy: the op's third output is empty
    q, k, v, g, beta, s0 = inputs("gdn")
    leaves = [t.requires_grad_() for t in (q, k, v, g, beta, s0)]
    for policy in glr.KEEP_POLICIES:
        glr.set_keep_forward(policy)
        o, ht = glr.chunk_gated_delta_rule(*leaves[:5], initial_state=leaves[5],
                                           output_final_state=True)
        grads = torch.autograd.grad(o.sum() + ht.sum(), leaves)
        assert all(gr is not None for gr in grads)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append([n.args for n in gm.graph.nodes
                       if n.op == "call_function" and "kcv_glr" in str(n.target)])
        return gm.forward

    def step(q, k, v, g, beta, s0):
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=s0)[0]

    torch._dynamo.reset()
    glr.set_keep_forward("always")
    torch.compile(step, backend=backend, fullgraph=True)(*leaves)
    with torch.no_grad():  # no gradient: nothing to keep for
        torch.compile(step, backend=backend, fullgraph=True)(*leaves)
    policies = [args[-1] for graph in graphs for args in graph]
    assert policies == ["always", "never"], graphs
    torch._dynamo.reset()


@pytest.mark.parametrize("bad", ["fp16", "BF16", "", 16, None.__class__, torch.bfloat16, True])
def test_set_precision_rejects_bad_values_naming_the_grades(bad):
    with pytest.raises(ValueError) as info:
        glr.set_precision(bad)
    msg = str(info.value)
    assert "precision" in msg and "'fp32'" in msg and "'bf16'" in msg, msg
    assert glr.get_precision() == "fp32"


def test_set_precision_returns_the_previous_grade():
    assert glr.get_precision() == "fp32"  # the default
    assert glr.set_precision("bf16") == "fp32"
    assert glr.get_precision() == "bf16"
    assert glr.set_precision("fp32") == "bf16"
    assert glr.GRADES == ("fp32", "bf16")


@pytest.mark.parametrize("member", CHUNK_MEMBERS)
@pytest.mark.parametrize("bad", ["fp16", 32, torch.float32])
def test_chunk_ops_reject_a_bad_precision_naming_the_grades(member, bad):
    x = inputs(member)
    with pytest.raises(ValueError) as info:
        chunk(member, *x, precision=bad)
    msg = str(info.value)
    assert msg.startswith("precision:") and "'fp32'" in msg and "'bf16'" in msg, msg


def test_decode_ops_take_no_grade():
    q, k, v, g, beta, s0 = inputs("gdn")
    with pytest.raises(TypeError, match="precision"):
        glr.fused_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, precision="bf16")
    with pytest.raises(TypeError, match="precision"):
        glr.fused_recurrent_delta_rule(q, k, v, beta, precision="bf16")


def _fwd_bwd(member, x, **kw):
    leaves = [None if t is None else t.detach().clone().requires_grad_() for t in x]
    o, ht = chunk(member, *leaves, output_final_state=True, **kw)
    gen = torch.Generator().manual_seed(11)
    w_o = torch.randn(o.shape, generator=gen, dtype=o.dtype)
    w_h = torch.randn(ht.shape, generator=gen, dtype=ht.dtype)
    used = [t for t in leaves if t is not None]
    grads = torch.autograd.grad((o * w_o).sum() + (ht * w_h).sum(), used)
    return [o, ht, *grads]


@pytest.mark.parametrize("member", CHUNK_MEMBERS)
@pytest.mark.parametrize("dtype", [torch.float64, BF16])
def test_cpu_runs_the_fp64_reference_under_both_grades(member, dtype):
    # On the CPU the grade changes nothing: "bf16" runs the fp64 chunked reference, which meets
    # both grades' bounds; the results are bit-identical to "fp32"'s, with the keyword or with the
    # process-wide default.
    x = [None if t is None else t.to(dtype) for t in inputs(member, K=128, V=128, T=20)]
    before = _launch.PATHS.copy()
    want = _fwd_bwd(member, x, precision="fp32")
    got = _fwd_bwd(member, x, precision="bf16")
    glr.set_precision("bf16")
    by_default = _fwd_bwd(member, x)
    counts = _launch.PATHS - before
    assert counts == {("forward", "reference"): 3, ("backward", "reference"): 3}, counts
    for a, b, c in zip(want, got, by_default):
        assert torch.equal(a, b) and torch.equal(a, c)


def test_grade_crosses_into_the_custom_op_as_a_static_argument():
    # the dynamo graph holds kcv_glr::forward with the grade as a constant argument; calls without
    # `precision` read the process-wide default at trace time, so setting it recompiles
    graphs = []

    def backend(gm, example_inputs):
        graphs.append([n.args for n in gm.graph.nodes
                       if n.op == "call_function" and "kcv_glr" in str(n.target)])
        return gm.forward

    q, k, v, g, beta, s0 = inputs("gdn")

    def step(q, k, v, g, beta, s0):
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=s0)[0]

    torch._dynamo.reset()
    compiled = torch.compile(step, backend=backend, fullgraph=True)
    want = step(q, k, v, g, beta, s0)
    assert torch.equal(compiled(q, k, v, g, beta, s0), want)
    glr.set_precision("bf16")
    assert torch.equal(compiled(q, k, v, g, beta, s0), want)
    grades = [args[-2] for graph in graphs for args in graph]
    assert grades == ["fp32", "bf16"], graphs
    torch._dynamo.reset()


# ------------------------------------------------------------------ the error model's bounds


def _flat(t):
    return None if t is None else t.detach().double().contiguous().reshape(-1).numpy()


def _problem(code, x, cu=None, scale=None, v_first=False):
    """kcv._glr's <problem> arguments of inputs x = (q, k, v, g, beta, h0)."""
    q, k, v, g, beta, h0 = x
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    cu = ([] if B == 1 else [b * T for b in range(B + 1)]) if cu is None else list(cu)
    scale = K ** -0.5 if scale is None else scale
    return (code, (B * T, H, HV, K, V), cu, _flat(q), _flat(k), _flat(v), _flat(g), _flat(beta),
            _flat(h0), scale, v_first)


@pytest.mark.parametrize("member,code", [("gdn", GDN), ("ssd", SSD), ("la", LA),
                                         ("deltanet", DELTANET)])
def test_bounds_bindings_are_positive_and_looser_for_bf16(member, code):
    x = [None if t is None else t.to(BF16).double() for t in inputs(member, T=70, K=16, V=16)]
    args = _problem(code, x)
    gen = torch.Generator().manual_seed(3)
    d_o = torch.randn(1, 70, 2, 16, generator=gen, dtype=torch.float64).to(BF16).double()
    d_ht = torch.randn(1, 2, 16, 16, generator=gen, dtype=torch.float64)
    fwd = {grade: _glr.forward_bounds(*args, grade) for grade in ("fp32", "bf16")}
    bwd = {grade: _glr.backward_bounds(*args, _flat(d_o), _flat(d_ht), grade)
           for grade in ("fp32", "bf16")}
    o_ref, ht_ref = _glr.ref_forward(*args)
    assert fwd["bf16"][0].shape == o_ref.shape and fwd["bf16"][1].shape == ht_ref.shape
    names = ["dq", "dk", "dv", "dg", "dbeta", "dh0"]
    every = zip(["o", "ht"] + names, fwd["fp32"] + tuple(bwd["fp32"]),
                fwd["bf16"] + tuple(bwd["bf16"]))
    for name, f32, b16 in every:
        assert f32.shape == b16.shape, name
        if f32.size:
            assert (f32 > 0).all() and (b16 >= f32).all(), name
            # the declared roundings reach these outputs; LA's ht and dh0 are sums of products
            # of bf16 inputs (exact operands, no decay), which the bf16 grade does not charge
            if name in ("o", "dq", "dk", "dv"):
                assert (b16 > f32).any(), name
    present = [n for n, t in zip(names, bwd["bf16"]) if t.size]
    want = ["dq", "dk", "dv"] + (["dg"] if member in ("gdn", "ssd") else []) + \
        (["dbeta"] if member in ("gdn", "deltanet") else []) + ["dh0"]
    assert present == want
    with pytest.raises(ValueError, match="grade"):
        _glr.forward_bounds(*args, "tf32")


# ------------------------------------------------------------------ the native entries' checks

built_with_cuda = pytest.mark.skipif(not glr.has_cuda(),
                                     reason="kcv._glr built without the CUDA kernels")
_P = 0x10000  # an aligned address no call below dereferences: each fails its checks first
_DIMS = (1, 200, 2, 2, 128, 128, 0)


def _mma_forward(member=GDN, dims=_DIMS, inputs=(_P, _P, _P, _P, _P, 0, 0), cu=(), o=_P,
                 ws=_P, nbytes=1 << 30, multiprocessors=132, keep=False):
    _glr.mma_forward(member, dims, 0.1, False, inputs, list(cu), o, 0, ws, nbytes, keep,
                     multiprocessors, 0)


def _mma_backward(grads=(_P, _P, _P, _P, _P, 0), d_o=_P, kept_bytes=1 << 30, scratch=_P,
                  scratch_bytes=1 << 30, recompute=True):
    _glr.mma_backward(GDN, _DIMS, 0.1, False, (_P, _P, _P, _P, _P, 0, 0), [], d_o, 0, grads, _P,
                      kept_bytes, scratch, scratch_bytes, recompute, 132, 0)


@built_with_cuda
def test_mma_entries_check_their_arguments_naming_the_field():
    # no GPU needed: every call below is refused before a launch
    fwd, kept, scratch = (_glr.mma_workspace_bytes(part, GDN, _DIMS)
                          for part in (_glr.MmaWorkspace.FORWARD, _glr.MmaWorkspace.KEPT,
                                       _glr.MmaWorkspace.SCRATCH))
    assert 0 < fwd < kept and scratch > 0
    cases = [
        ("key_dim", lambda: _glr.mma_workspace_bytes(_glr.MmaWorkspace.SCRATCH, GDN,
                                                     (1, 200, 2, 2, 64, 128, 0))),
        ("value_dim", lambda: _mma_forward(dims=(1, 200, 2, 2, 128, 96, 0))),
        ("v_heads", lambda: _glr.mma_workspace_bytes(_glr.MmaWorkspace.FORWARD, GDN,
                                                     (1, 200, 2, 3, 128, 128, 0))),
        ("q must not be null", lambda: _mma_forward(inputs=(0, _P, _P, _P, _P, 0, 0))),
        ("g is required", lambda: _mma_forward(inputs=(_P, _P, _P, 0, _P, 0, 0))),
        ("beta is required", lambda: _mma_forward(inputs=(_P, _P, _P, _P, 0, 0, 0))),
        ("g must be null", lambda: _mma_forward(member=LA)),
        ("k: must be 16-byte aligned", lambda: _mma_forward(inputs=(_P, _P + 8, _P, _P, _P, 0,
                                                                    0))),
        ("o: must not be null", lambda: _mma_forward(o=0)),
        ("o: must be 16-byte aligned", lambda: _mma_forward(o=_P + 2)),
        ("workspace", lambda: _mma_forward(nbytes=10)),
        ("kept workspace too small", lambda: _mma_forward(nbytes=kept - 1, keep=True)),
        ("cu_seqlens must end", lambda: _mma_forward(dims=(1, 200, 2, 2, 128, 128, 2),
                                                     inputs=(_P,) * 5 + (0, _P),
                                                     cu=(0, 50, 100))),
        ("expected N + 1 = 3 entries, got 2",
         lambda: _mma_forward(dims=(1, 200, 2, 2, 128, 128, 2), inputs=(_P,) * 5 + (0, _P),
                              cu=(0, 200))),
        ("multiprocessors", lambda: _mma_forward(multiprocessors=0)),
        ("d_o: must not be null", lambda: _mma_backward(d_o=0)),
        ("dq: must not be null", lambda: _mma_backward(grads=(0, _P, _P, _P, _P, 0))),
        ("dg", lambda: _mma_backward(grads=(_P, _P, _P, 0, _P, 0))),
        ("dbeta", lambda: _mma_backward(grads=(_P, _P, _P, _P, 0, 0))),
        ("kept workspace too small", lambda: _mma_backward(kept_bytes=kept - 1)),
        ("scratch: must not be null", lambda: _mma_backward(scratch=0)),
        ("scratch: must be 16-byte aligned", lambda: _mma_backward(scratch=_P + 8)),
        ("backward scratch too small", lambda: _mma_backward(scratch_bytes=scratch - 1,
                                                             recompute=False)),
    ]
    for text, fn in cases:
        with pytest.raises(ValueError) as info:
            fn()
        assert text in str(info.value), (text, str(info.value))


# ------------------------------------------------------------------ CUDA (skipped without a GPU)

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and glr.has_cuda()),
                          reason="needs a GPU and kcv._glr built with the CUDA kernels")

CODES = {"gdn": GDN, "ssd": SSD, "la": LA, "deltanet": DELTANET, "gla": GLA, "kda": KDA}
NAMES = ["q", "k", "v", "g", "beta", "h0"]


def _tc_inputs(member, B, T, N, seed=0, H=2, D=128, HV=None):
    """fla-like inputs on the CPU (glr/check/glr_cases.py's draws): l2-normalised bf16 q, k
    [B, T, H, D], bf16 v [B, T, HV, D], fp32 log-decay g (gdn, ssd; per channel for gla, kda), bf16
    β (gdn, deltanet, kda), fp32 h0 [N, HV, D, D]; HV (GVA) defaults to H."""
    HV = H if HV is None else HV
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    nq = lambda t: torch.nn.functional.normalize(t, dim=-1)  # noqa: E731
    q, k, v = nq(r(B, T, H, D)).to(BF16), nq(r(B, T, H, D)).to(BF16), r(B, T, HV, D).to(BF16)
    g = torch.nn.functional.logsigmoid(r(B, T, HV)) / 16 if member in ("gdn", "ssd") else None
    if member in ("gla", "kda"):  # the per-channel log-decay [B, T, HV, D]
        g = torch.nn.functional.logsigmoid(r(B, T, HV, D)) / 16
    beta = torch.sigmoid(r(B, T, HV)).to(BF16) if member in ("gdn", "deltanet", "kda") else None
    h0 = r(N, HV, D, D) * 0.1
    w_o = r(B, T, HV, D).to(BF16)  # d_o: the gradient of (o.float() * w_o).sum() is bf16(w_o)
    w_h = r(N, HV, D, D)
    return [q, k, v, g, beta, h0], w_o, w_h


def _tc_call(member, q, k, v, g, beta, h0, cu=None, cu_cpu=None, state=True, **kw):
    """One chunk op; without `state` fla's most common training call: no initial state, no final
    state asked for (then ht is None)."""
    kw = dict(initial_state=h0, output_final_state=state, cu_seqlens=cu, cu_seqlens_cpu=cu_cpu,
              **kw)
    if member == "gdn":
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, **kw)
    if member == "deltanet":
        return glr.chunk_delta_rule(q, k, v, beta, **kw)
    if member == "gla":
        return glr.chunk_gla(q, k, v, g, **kw)
    if member == "kda":
        return glr.chunk_kda(q, k, v, g, beta, **kw)
    return glr.chunk_simple_gla(q, k, v, g=g, **kw)  # ssd with g, la without


def _tc_step(member, leaves, w_o, w_h, cu=None, cu_cpu=None, **kw):
    """[o, ht] and the gradients of the leaves present (q, k, v, g, beta, h0 order); w_h None:
    no final state asked for (ht None, no loss term)."""
    o, ht = _tc_call(member, *leaves, cu=cu, cu_cpu=cu_cpu, state=w_h is not None, **kw)
    used = [t for t in leaves if t is not None]
    loss = (o.float() * w_o).sum() + (0 if ht is None else (ht * w_h).sum())
    return [o, ht] + list(torch.autograd.grad(loss, used))


def _within(name, got, ref, tau):
    got = got.detach().double().cpu().reshape(-1)
    ref = torch.from_numpy(ref)
    tau = torch.from_numpy(tau)
    assert got.shape == ref.shape == tau.shape, name
    err = (got - ref).abs()
    assert torch.isfinite(got).all(), f"{name}: non-finite values"
    worst = int(torch.argmax(err / tau))
    assert (err <= tau).all(), (f"{name}: |y - y*| = {float(err[worst]):.3e} > tau = "
                                f"{float(tau[worst]):.3e} at {worst}")


@cuda
@pytest.mark.parametrize("member", ["gdn", "ssd", "la", "deltanet", "gla", "kda"])
@pytest.mark.parametrize("layout", ["single", "batch", "packed", "packed-vk", "packed-gva",
                                    "no-state"])
def test_cuda_bf16_grade_runs_tensor_cores_within_the_bf16_bound(member, layout):
    # no-state: no h0, no final state (null h0, dht, ht, dh0), T a multiple of the chunk
    B, T, cu = {"single": (1, 130, None), "batch": (2, 150, None),
                "no-state": (2, 192, None)}.get(layout, (1, 200, [0, 70, 133, 200]))
    v_first = layout == "packed-vk"  # states [V, K]
    N = B if cu is None else len(cu) - 1
    host, w_o, w_h = _tc_inputs(member, B, T, N, HV=4 if layout == "packed-gva" else None)
    if layout == "no-state":
        host[5], w_h = None, None
    leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
    cu_dev = None if cu is None else torch.tensor(cu, device="cuda")
    cu_cpu = None if cu is None else torch.tensor(cu)
    before = _launch.PATHS.copy()
    got = _tc_step(member, leaves, w_o.cuda(), None if w_h is None else w_h.cuda(), cu_dev,
                   cu_cpu, precision="bf16", state_v_first=v_first)
    torch.cuda.synchronize()
    counts = _launch.PATHS - before
    assert counts == {("forward", TENSOR_CORE): 1, ("backward", TENSOR_CORE): 1}, counts
    # the bound of the bf16 grade around the fp64 chunked reference, on the same (bf16) inputs
    x = [None if t is None else t.double() for t in host]
    args = _problem(CODES[member], x, cu, v_first=v_first)
    tau_o, tau_ht = _glr.forward_bounds(*args, "bf16")
    ref_o, ref_ht = _glr.ref_forward(*args)
    _within("o", got[0], ref_o, tau_o)
    if w_h is not None:
        _within("ht", got[1], ref_ht, tau_ht)
    taus = _glr.backward_bounds(*args, _flat(w_o), _flat(w_h), "bf16")
    refs = _glr.ref_backward(*args, _flat(w_o), _flat(w_h))
    names = [n for n, t in zip(NAMES, host) if t is not None]
    by_name = dict(zip(["q", "k", "v", "g", "beta", "h0"], zip(refs, taus)))
    for name, grad in zip(names, got[2:]):
        ref, tau = by_name[name]
        _within("d" + name, grad, ref, tau)


@cuda
@pytest.mark.parametrize("member", ["gdn", "ssd", "la", "deltanet", "gla", "kda"])
def test_cuda_kept_forward_gives_the_recomputing_backwards_bits(member):
    # packed sequences under GVA: o, ht and every gradient are the same bits whether the forward
    # kept its pieces or the backward recomputed them; a second backward from the same kept
    # pieces (retain_graph) gives the first's bits, so the backward only reads them
    cu = [0, 70, 133, 200]
    cu_dev, cu_cpu = torch.tensor(cu, device="cuda"), torch.tensor(cu)
    host, w_o, w_h = _tc_inputs(member, 1, 200, 3, HV=4)
    w_o, w_h = w_o.cuda(), w_h.cuda()
    got = {}
    for policy, pieces in (("never", "recomputed"), ("always", "kept"), ("auto", "kept")):
        glr.set_keep_forward(policy)
        leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
        before = _launch.BACKWARD_PIECES.copy()
        got[policy] = _tc_step(member, leaves, w_o, w_h, cu_dev, cu_cpu, precision="bf16")
        assert _launch.BACKWARD_PIECES - before == {pieces: 1}, policy
    for policy in ("always", "auto"):
        for a, b in zip(got["never"], got[policy]):
            assert torch.equal(a, b), policy
    glr.set_keep_forward("always")
    leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
    o, ht = _tc_call(member, *leaves, cu=cu_dev, cu_cpu=cu_cpu, precision="bf16")
    used = [t for t in leaves if t is not None]
    loss = (o.float() * w_o).sum() + (ht * w_h).sum()
    first = torch.autograd.grad(loss, used, retain_graph=True)
    second = torch.autograd.grad(loss, used)
    for a, b, c in zip(first, second, got["never"][2:]):
        assert torch.equal(a, b) and torch.equal(a, c)


@cuda
@pytest.mark.parametrize("member", ["gdn", "ssd", "la", "deltanet", "gla", "kda"])
def test_cuda_fp32_grade_and_the_default_keep_the_cuda_core_kernels(member):
    host, w_o, w_h = _tc_inputs(member, 1, 100, 1)
    leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
    before = _launch.PATHS.copy()
    _tc_step(member, leaves, w_o.cuda(), w_h.cuda())  # the default grade: fp32
    _tc_step(member, leaves, w_o.cuda(), w_h.cuda(), precision="fp32")
    assert _launch.PATHS - before == {("forward", CUDA_CORE): 2, ("backward", CUDA_CORE): 2}
    glr.set_precision("bf16")  # what fla's layers, which pass no precision, run under
    before = _launch.PATHS.copy()
    _tc_step(member, leaves, w_o.cuda(), w_h.cuda())
    assert _launch.PATHS - before == {("forward", TENSOR_CORE): 1, ("backward", TENSOR_CORE): 1}


@cuda
def test_cuda_bf16_grade_falls_back_where_tensor_cores_do_not_apply():
    cases = []
    host, w_o, w_h = _tc_inputs("gdn", 1, 100, 1, D=64)  # K = V = 64
    cases.append(("gdn", host, w_o, w_h))
    host, w_o, w_h = _tc_inputs("gdn", 1, 100, 1)
    host[4] = host[4].float()  # fp32 β
    cases.append(("gdn", host, w_o, w_h))
    for member, host, w_o, w_h in cases:
        leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
        before = _launch.PATHS.copy()
        _tc_step(member, leaves, w_o.cuda(), w_h.cuda(), precision="bf16")
        assert _launch.PATHS - before == {("forward", CUDA_CORE): 1, ("backward", CUDA_CORE): 1}
    # the per-channel gates (GLA, KDA) have tensor-core kernels too
    q, k, v, _, beta, h0 = [t.cuda() for t in _tc_inputs("gdn", 1, 100, 1)[0]]
    gk = torch.nn.functional.logsigmoid(torch.randn(1, 100, 2, 128, device="cuda")) / 16
    before = _launch.PATHS.copy()
    glr.chunk_kda(q, k, v, gk, beta, initial_state=h0, precision="bf16")
    glr.chunk_gla(q, k, v, gk, initial_state=h0, precision="bf16")
    assert _launch.PATHS - before == {("forward", TENSOR_CORE): 2}


@cuda
@pytest.mark.parametrize("member", ["gdn", "deltanet"])
def test_cuda_graph_replay_equals_eager_under_bf16(member):
    cu = [0, 70, 133, 200]
    cu_dev, cu_cpu = torch.tensor(cu, device="cuda"), torch.tensor(cu)
    host, w_o, w_h = _tc_inputs(member, 1, 200, 3)
    leaves = [None if t is None else t.cuda().requires_grad_() for t in host]
    w_o, w_h = w_o.cuda(), w_h.cuda()
    step = lambda ls: _tc_step(member, ls, w_o, w_h, cu_dev, cu_cpu, precision="bf16")  # noqa
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(leaves)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(leaves)
    for seed in (1, 2):
        fresh = [None if t is None else t.cuda() for t in _tc_inputs(member, 1, 200, 3, seed)[0]]
        with torch.no_grad():
            for static, new in zip(leaves, fresh):
                if static is not None:
                    static.copy_(new)
        graph.replay()
        before = _launch.PATHS.copy()
        want = step([None if t is None else t.requires_grad_() for t in fresh])
        assert _launch.PATHS - before == {("forward", TENSOR_CORE): 1,
                                          ("backward", TENSOR_CORE): 1}
        for got, ref in zip(static_out, want):
            assert torch.equal(got, ref)


@cuda
def test_cuda_compile_equals_eager_under_bf16():
    host, w_o, w_h = _tc_inputs("gdn", 1, 200, 1)
    leaves = [t.cuda().requires_grad_() for t in host]
    w_o, w_h = w_o.cuda(), w_h.cuda()

    def step(q, k, v, g, beta, h0):
        o, ht = _tc_call("gdn", q, k, v, g, beta, h0, precision="bf16")
        return o, ht, (o.float() * w_o).sum() + (ht * w_h).sum()

    before = _launch.PATHS.copy()
    step(*leaves)  # eager: the tensor-core kernels, so the compiled run is compared with them
    assert _launch.PATHS - before == {("forward", TENSOR_CORE): 1}
    assert_compiled_step_equals_eager(step, leaves, "reduce-overhead")
