"""kcv.glr under torch.compile and CUDA graphs.

CPU: the custom ops kcv_glr::forward / kcv_glr::backward pass torch.library.opcheck (schema,
autograd registration, fake tensors, AOT dispatch with dynamic shapes); a model calling each op
compiles with fullgraph=True (so no graph break anywhere, the fla prologues and cu_seqlens
included) and gives the eager outputs and gradients, bit for bit with the eager and aot_eager
backends (the same fp64 code runs) and to 1e-12 with inductor; packed normalized linear attention
equals its sequences run one by one.

CUDA (skipped without a GPU): with cu_seqlens_cpu (or no cu_seqlens) a forward and backward makes
no synchronizing CUDA call (torch.cuda.set_sync_debug_mode("error")), and without it the one
documented read of cu_seqlens is the only one; forward+backward captured in a torch.cuda.CUDAGraph
and replayed on new input values equals eager on those values exactly, as does a captured decode
step; torch.compile (inductor, and reduce-overhead's CUDA graphs) equals eager exactly on the op's
outputs and gradients."""

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
glr = pytest.importorskip("kcv.glr")

from test_glr import make  # noqa: E402

EXACT = dict(rtol=0, atol=0)


# ------------------------------------------------------------------ the models under test

class Layer(torch.nn.Module):
    """A token mixer in fla's shape: projections, then one kcv op (with its fla prologues), then
    an output projection. `op` names the op; the recurrence runs on the CPU reference here."""

    def __init__(self, op, H=2, K=8, V=8, dtype=torch.float64):
        super().__init__()
        gen = torch.Generator().manual_seed(1)
        D = H * K
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, generator=gen, dtype=dtype) / 4)  # noqa
        self.op, self.H, self.K, self.V = op, H, K, V
        self.wq, self.wk, self.wv, self.wo = p(D, D), p(D, D), p(D, H * V), p(H * V, D)
        self.wg, self.wb = p(D, H * K), p(D, H)
        self.A_log, self.dt_bias = p(H), p(H)

    def forward(self, x, cu_seqlens=None, cu_seqlens_cpu=None, h0=None):
        B, T, _ = x.shape
        H, K, V = self.H, self.K, self.V
        q = (x @ self.wq).reshape(B, T, H, K)
        k = (x @ self.wk).reshape(B, T, H, K)
        v = (x @ self.wv).reshape(B, T, H, V)
        gk = torch.nn.functional.logsigmoid(x @ self.wg).reshape(B, T, H, K) / 4
        g_raw = (x @ self.wg).reshape(B, T, H, K)[..., 0]
        beta = x @ self.wb
        var = dict(cu_seqlens=cu_seqlens, cu_seqlens_cpu=cu_seqlens_cpu, initial_state=h0,
                   output_final_state=True)
        if self.op == "gdn":
            o, ht = glr.chunk_gated_delta_rule(
                q, k, v, g_raw, beta, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                A_log=self.A_log, dt_bias=self.dt_bias, use_beta_sigmoid_in_kernel=True, **var)
        elif self.op == "kda":
            o, ht = glr.chunk_kda(q, k, v, gk, beta.sigmoid(), use_qk_l2norm_in_kernel=True,
                                  **var)
        elif self.op == "gla":
            o, ht = glr.chunk_gla(q, k, v, gk, **var)
        elif self.op == "deltanet":
            o, ht = glr.chunk_delta_rule(q, k, v, beta.sigmoid(), use_qk_l2norm_in_kernel=True,
                                         **var)
        elif self.op == "la":  # normalize=True: the running key sums, per sequence
            o, (ht, _) = glr.chunk_linear_attn(q, k, v, **var)
        else:  # "recurrent": the decode op with gradients (the token-serial oracle's adjoint)
            o, ht = glr.fused_recurrent_gated_delta_rule(
                q, k, v, g=g_raw.sigmoid().log(), beta=beta.sigmoid(), **var)
        return o.reshape(B, T, H * V) @ self.wo, ht


def _loss(out):
    y, ht = out
    return (y * y).sum() + (ht * ht).sum()


def _run(fn, layer, x, **kw):
    """(y, ht, grads of x and every parameter) of one forward and backward."""
    x = x.detach().requires_grad_()
    y, ht = fn(x, **kw)
    params = [x] + list(layer.parameters())
    grads = torch.autograd.grad(_loss((y, ht)), params, allow_unused=True)
    return [y, ht] + [g for g in grads if g is not None]


def _varlen(T=40):
    cu = torch.tensor([0, 11, 27, T], dtype=torch.int32)
    x = torch.randn(1, T, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    h0 = torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(3),
                     dtype=torch.float64) / 4
    return x, dict(cu_seqlens=cu, cu_seqlens_cpu=cu.clone(), h0=h0)


def _check_compiled_equals_eager(layer, backend, cases, **tol):
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    for x, kw in cases:
        want = _run(layer, layer, x, **kw)
        got = _run(compiled, layer, x, **kw)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, **tol)


# ------------------------------------------------------------------ CPU: torch.compile

@pytest.mark.parametrize("op", ["gdn", "kda", "gla", "deltanet", "la", "recurrent"])
def test_compile_aot_eager_matches_eager(op):
    # fullgraph=True: a graph break anywhere (kcv._glr, a host read of the offsets) would raise
    _check_compiled_equals_eager(Layer(op), "aot_eager", [_varlen()], **EXACT)


def test_compile_eager_backend_matches_eager_across_shapes():
    # a plain batch, then packed sequences, then another length: each retrace keeps the results
    x2 = torch.randn(2, 24, 16, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    xv, kw = _varlen()
    xw, kw2 = _varlen(T=52)
    _check_compiled_equals_eager(Layer("gdn"), "eager", [(x2, {}), (xv, kw), (xw, kw2)], **EXACT)


def test_compile_inductor_matches_eager():
    # inductor compiles the prologues and projections itself: equal up to fp64 rounding
    xv, kw = _varlen()
    _check_compiled_equals_eager(Layer("gdn"), "inductor", [(xv, kw)], rtol=1e-12, atol=1e-12)


def test_compile_traces_the_custom_ops():
    graphs = []

    def backend(gm, example_inputs):
        del example_inputs
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    xv, kw = _varlen()
    torch.compile(Layer("gdn"), backend=backend, fullgraph=True)(xv, **kw)
    assert len(graphs) == 1
    targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.kcv_glr.forward.default) == 1


def _op_inputs(dtype=torch.float64):
    q, k, v, g, beta, _ = make("gdn", T=30, dtype=dtype)
    cu = torch.tensor([0, 9, 30])
    h0 = torch.randn(2, 2, 8, 6, dtype=dtype, generator=torch.Generator().manual_seed(5))
    return q, k, v, g, beta, h0, cu


def test_forward_op_passes_opcheck():
    q, k, v, g, beta, h0, cu = _op_inputs()
    leaves = [t.requires_grad_() for t in (q, k, v, g, beta, h0)]
    # chunk GDN with packed sequences and a state, at both grades; the decode path of linear
    # attention
    cases = [(*leaves, cu, cu.clone(), 4, "chunk", 0.3, False, 64, True, False, "fp32", "auto"),
             (*leaves, cu, cu.clone(), 4, "chunk", 0.3, False, 64, True, False, "bf16", "always"),
             (q, k, v, None, None, None, None, None, 0, "recurrent", 0.5, True, 64, False, False,
              "fp32", "never")]
    for args in cases:
        result = torch.library.opcheck(torch.ops.kcv_glr.forward.default, args)
        assert set(result.values()) == {"SUCCESS"}, result


def test_backward_op_passes_opcheck():
    q, k, v, g, beta, h0, cu = _op_inputs()
    d_o = torch.randn(1, 30, 2, 6, dtype=torch.float64)
    d_ht = torch.randn_like(h0)
    for grade in ("fp32", "bf16"):
        args = (q, k, v, g, beta, h0, cu, cu.clone(), d_o, d_ht, None, 4, "chunk", 0.3, False, 64,
                grade)
        result = torch.library.opcheck(torch.ops.kcv_glr.backward.default, args)
        assert set(result.values()) == {"SUCCESS"}, result


def test_custom_op_gradients_are_the_reference_adjoint():
    # the gradients through kcv_glr::forward equal kcv._glr's fp64 adjoint, so register_autograd
    # wires forward to backward with the arguments in their places
    q, k, v, g, beta, h0, cu = _op_inputs()
    leaves = [t.requires_grad_() for t in (q, k, v, g, beta, h0)]
    o, ht = glr.chunk_gated_delta_rule(*leaves[:5], initial_state=leaves[5], cu_seqlens=cu,
                                       output_final_state=True)
    w_o, w_h = torch.randn_like(o), torch.randn_like(ht)
    grads = torch.autograd.grad((o * w_o).sum() + (ht * w_h).sum(), leaves)
    want = torch.ops.kcv_glr.backward(*[t.detach() for t in leaves], cu, None, w_o, w_h, None,
                                      4, "chunk", 8 ** -0.5, False, 64, "fp32")
    for a, b in zip(grads, want):
        torch.testing.assert_close(a, b, **EXACT)


def test_packed_normalized_linear_attention_equals_sequences_one_by_one():
    q, k, v, _, _, _ = make("la", T=25)
    z0 = torch.randn(2, 1, 2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    s0 = torch.randn(2, 2, 8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    cu = torch.tensor([0, 10, 25])
    o, (ht, z) = glr.chunk_linear_attn(q, k, v, initial_state=(s0, z0), output_final_state=True,
                                       cu_seqlens=cu)
    for n, (a, b) in enumerate([(0, 10), (10, 25)]):
        on, (hn, zn) = glr.chunk_linear_attn(q[:, a:b], k[:, a:b], v[:, a:b],
                                             initial_state=(s0[n:n + 1], z0[n:n + 1]),
                                             output_final_state=True)
        torch.testing.assert_close(o[:, a:b], on, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(z[n:n + 1], zn, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ht[n:n + 1], hn, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ the launch path's sources

ROOT = Path(__file__).resolve().parents[2]
#: Calls that wait for the device, allocate outside torch's caching allocator, or copy
#: synchronously; a launch on the legacy default stream (`<<<..., 0>>>`).
_FORBIDDEN_NATIVE = re.compile(
    r"cuda(Malloc|MallocAsync|MallocManaged|MallocHost|Free|FreeAsync|FreeHost|Memcpy|Memset|"
    r"DeviceSynchronize|"
    r"StreamSynchronize|EventSynchronize|StreamQuery)\b|,\s*0\s*>>>|cudaStreamLegacy")
_FORBIDDEN_PY = re.compile(r"\.(item|tolist|cpu|numpy)\(|synchronize\(")


@pytest.mark.skipif(not (ROOT / "glr" / "launch").is_dir(), reason="needs the source tree")
def test_launch_path_neither_waits_nor_allocates():
    # glr/launch and glr/kernels: every launch on the caller's stream, the workspace the caller's
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("glr/launch", "glr/kernels")
             for path in sorted((ROOT / folder).iterdir())
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if _FORBIDDEN_NATIVE.search(line)]
    assert not found, found
    # python/kcv/glr: host reads only where they are documented (the CPU path's numpy buffers in
    # _native.np64, and read_offsets' copy of cu_seqlens when cu_seqlens_cpu is absent)
    allowed = {("_native.py", "np64"), ("_validate.py", "read_offsets")}
    hits = set()
    for path in sorted((ROOT / "python" / "kcv" / "glr").glob("*.py")):
        function = None
        for line in path.read_text().splitlines():
            if line.startswith("def "):
                function = line[4:].split("(")[0]
            if _FORBIDDEN_PY.search(line):
                hits.add((path.name, function))
    assert hits == allowed, hits


# ------------------------------------------------------------------ CUDA (skipped without a GPU)

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and glr.has_cuda()),
                          reason="needs a GPU and kcv._glr built with the CUDA kernels")


def _cuda_inputs(member, seed, T=200, H=2, K=64, V=64):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    nq = lambda t: torch.nn.functional.normalize(t, dim=-1)  # noqa: E731
    q, k, v = nq(r(1, T, H, K)), nq(r(1, T, H, K)), r(1, T, H, V)
    g = torch.nn.functional.logsigmoid(r(1, T, H) if member == "gdn" else r(1, T, H, K)) / 4
    beta = torch.sigmoid(r(1, T, H))
    h0 = r(3, H, K, V) / 4
    host = [q.bfloat16(), k.bfloat16(), v.bfloat16(), g, beta, h0]
    return [t.cuda() for t in host]


_CU = [0, 70, 133, 200]


def _cuda_call(member, q, k, v, g, beta, h0, cu, cu_cpu):
    kw = dict(initial_state=h0, output_final_state=True, cu_seqlens=cu, cu_seqlens_cpu=cu_cpu)
    if member == "gdn":
        return glr.chunk_gated_delta_rule(q, k, v, g, beta, **kw)
    if member == "kda":
        return glr.chunk_kda(q, k, v, g, beta, **kw)
    return glr.chunk_gla(q, k, v, g, **kw)


def _cuda_step(member, leaves, cu, cu_cpu, w_o, w_h):
    """o, ht and the gradients of every leaf the member uses: one forward and backward."""
    o, ht = _cuda_call(member, *leaves, cu, cu_cpu)
    loss = (o.float() * w_o).sum() + (ht * w_h).sum()
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [o, ht] + [g for g in grads if g is not None]


def _cotangents(leaves):
    gen = torch.Generator().manual_seed(9)
    q, v, h0 = leaves[0], leaves[2], leaves[5]
    w_o = torch.randn(*q.shape[:3], v.shape[-1], generator=gen).cuda()
    return w_o, torch.randn(h0.shape, generator=gen).cuda()


@cuda
@pytest.mark.parametrize("varlen", [True, False])
def test_cuda_forward_backward_makes_no_host_sync(varlen):
    leaves = [t.requires_grad_() for t in _cuda_inputs("gdn", 0)]
    cu, cu_cpu = torch.tensor(_CU, device="cuda"), torch.tensor(_CU)
    if not varlen:  # a batch of one: h0 holds one state
        leaves[5] = leaves[5][:1].detach().requires_grad_()
        cu = cu_cpu = None
    w_o, w_h = _cotangents(leaves)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _cuda_step("gdn", leaves, cu, cu_cpu, w_o, w_h)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()


@cuda
def test_cuda_cu_seqlens_without_cpu_copy_is_read_on_the_host():
    # the documented exception: without cu_seqlens_cpu the op copies cu_seqlens to the host
    leaves = _cuda_inputs("gdn", 0)
    cu = torch.tensor(_CU, device="cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError, match="synchroniz"):
            _cuda_call("gdn", *leaves, cu, None)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def _capture(member, leaves, cu, cu_cpu, w_o, w_h):
    """A CUDA graph of one forward and backward on the static `leaves`, and its outputs."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the capture, as torch's docs ask
        _cuda_step(member, leaves, cu, cu_cpu, w_o, w_h)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = _cuda_step(member, leaves, cu, cu_cpu, w_o, w_h)
    return graph, static_out


@cuda
@pytest.mark.parametrize("member", ["gdn", "kda", "gla"])
def test_cuda_graph_replay_equals_eager(member):
    leaves = [t.requires_grad_() for t in _cuda_inputs(member, 0)]
    cu, cu_cpu = torch.tensor(_CU, device="cuda", dtype=torch.int32), torch.tensor(_CU)
    w_o, w_h = _cotangents(leaves)
    graph, static_out = _capture(member, leaves, cu, cu_cpu, w_o, w_h)
    for seed in (1, 2):  # new values in the captured inputs: the replay reads them
        fresh = _cuda_inputs(member, seed)
        with torch.no_grad():
            for static, new in zip(leaves, fresh):
                static.copy_(new)
        graph.replay()
        want = _cuda_step(member, [t.requires_grad_() for t in fresh], cu, cu_cpu, w_o, w_h)
        for got, ref in zip(static_out, want):
            assert torch.equal(got, ref)


@cuda
def test_cuda_graph_replay_of_a_decode_step_equals_eager():
    q, k, v, g, beta, h0 = _cuda_inputs("gdn", 0, T=1)
    h0 = h0[:1].contiguous()
    step = lambda: glr.fused_recurrent_gated_delta_rule(  # noqa: E731
        q.float(), k.float(), v.float(), g=g, beta=beta, initial_state=h0,
        output_final_state=True)
    with torch.no_grad():
        step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_o, static_h = step()
        for seed in (1, 2):
            for static, new in zip((q, k, v, g, beta), _cuda_inputs("gdn", seed, T=1)):
                static.copy_(new)
            graph.replay()
            o, ht = step()
            assert torch.equal(static_o, o) and torch.equal(static_h, ht)


@cuda
@pytest.mark.parametrize("mode,varlen", [(None, True), ("reduce-overhead", False)])
def test_cuda_compile_equals_eager(mode, varlen):
    leaves = [t.requires_grad_() for t in _cuda_inputs("gdn", 0)]
    cu, cu_cpu = torch.tensor(_CU, device="cuda"), torch.tensor(_CU)
    if not varlen:  # reduce-overhead's CUDA graphs take no CPU tensor: no cu_seqlens_cpu
        leaves[5] = leaves[5][:1].detach().requires_grad_()
        cu = cu_cpu = None
    w_o, w_h = _cotangents(leaves)

    def step(q, k, v, g, beta, h0):
        o, ht = _cuda_call("gdn", q, k, v, g, beta, h0, cu, cu_cpu)
        return o, ht, (o.float() * w_o).sum() + (ht * w_h).sum()

    assert_compiled_step_equals_eager(step, leaves, mode)


def assert_compiled_step_equals_eager(step, leaves, mode):
    """step(*leaves) -> (o, ht, loss) compiled (fullgraph, `mode`) gives eager's o, ht and
    gradients bit for bit, on its third call."""
    torch._dynamo.reset()
    compiled = torch.compile(step, mode=mode, fullgraph=True)
    for _ in range(3):  # reduce-overhead records its graph on the second call, replays on the third
        o, ht, loss = compiled(*leaves)
        got = [o.clone(), ht.clone()] + [t.clone() for t in torch.autograd.grad(loss, leaves)]
    o, ht, loss = step(*leaves)
    want = [o, ht] + list(torch.autograd.grad(loss, leaves))
    for a, b in zip(got, want):
        assert torch.equal(a, b)
