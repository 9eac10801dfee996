"""fla's own layers through kcv's fla backend on the CPU (`import kcv.glr.fla`).

Each of fla's six layers (GatedDeltaNet, KimiDeltaAttention, GatedLinearAttention,
SimpleGatedLinearAttention, LinearAttention, DeltaNet) is built on the CPU and run twice with the
same weights: once as is (fla dispatches its op to kcv, which runs the fp64 reference), once with
the layer's op name pointed at fla's own naive recurrences (fla.ops.*.naive, with fla's gate
references naive_gdn_gate / naive_kda_gate), since fla's Triton kernels cannot run on a CPU. The
training path (chunk ops, with gradients) and the decode path (eval, no grad, q_len <= 64: the
fused_recurrent ops) are both compared, outputs and parameter gradients.

Two things of fla's that need Triton at run time are kept out: the short convolution
(use_short_conv=False) and the Triton RMSNorm modules, which kcv.glr.fla_modules swaps for a torch
RMSNorm with the same weights in both runs. Skipped when fla (flash-linear-attention) is not installed."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fla")
fla_layers = pytest.importorskip("fla.layers")  # needs transformers (flash-linear-attention)

import importlib  # noqa: E402

import kcv.glr.fla as backend  # noqa: E402
from kcv.glr.fla_modules import use_torch_modules  # noqa: E402
from fla.ops.delta_rule.naive import delta_rule_recurrence  # noqa: E402
from fla.ops.gated_delta_rule.gate import naive_gdn_gate  # noqa: E402
from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule  # noqa: E402
from fla.ops.gla.naive import naive_recurrent_gla  # noqa: E402
from fla.ops.kda.gate import naive_kda_gate, naive_kda_lowerbound_gate  # noqa: E402
from fla.ops.kda.naive import naive_recurrent_kda  # noqa: E402
from fla.ops.linear_attn.naive import naive_recurrent_linear_attn  # noqa: E402
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla  # noqa: E402

HIDDEN, HEADS, T_TRAIN, T_DECODE = 32, 2, 70, 8


# ------------------------------------------------------------ fla's references, fla's arguments

def _l2(x):
    """fla's l2norm definition, x * rsqrt(sum x^2 + 1e-6)."""
    xf = x.float()
    return xf * torch.rsqrt(xf.square().sum(-1, keepdim=True) + 1e-6)


def _prologue(q, k, beta, kw):
    if kw.get("use_qk_l2norm_in_kernel"):
        q, k = _l2(q), _l2(k)
    if kw.get("use_beta_sigmoid_in_kernel"):
        beta = beta.float().sigmoid() * (2.0 if kw.get("allow_neg_eigval") else 1.0)
    return q, k, beta


def ref_gdn(q, k, v, g=None, beta=None, initial_state=None, **kw):
    assert initial_state is None
    if kw.get("use_gate_in_kernel"):
        g = naive_gdn_gate(g, kw["A_log"], kw.get("dt_bias"))
    q, k, beta = _prologue(q, k, beta, kw)
    o, _ = naive_recurrent_gated_delta_rule(q, k, v.float(), beta, g, kw.get("scale"))
    return o.to(v.dtype), None


def ref_kda(q, k, v, g=None, beta=None, initial_state=None, **kw):
    assert initial_state is None
    if kw.get("use_gate_in_kernel"):
        if kw.get("lower_bound") is not None:
            g = naive_kda_lowerbound_gate(g, kw.get("A_log"), kw.get("dt_bias"), kw["lower_bound"])
        else:
            g = naive_kda_gate(g, kw["A_log"], kw.get("dt_bias"))
    q, k, beta = _prologue(q, k, beta, kw)
    o, _ = naive_recurrent_kda(q, k, v.float(), g, beta, kw.get("scale"))
    return o.to(v.dtype), None


def ref_gla(q, k, v, g=None, gk=None, initial_state=None, **kw):
    assert initial_state is None
    o, _ = naive_recurrent_gla(q, k, v, gk if gk is not None else g)
    return o.to(v.dtype), None


def ref_simple_gla(q, k, v, g=None, initial_state=None, **kw):
    assert initial_state is None
    o, _ = naive_recurrent_simple_gla(q, k, v, g, kw.get("scale"))
    return o.to(v.dtype), None


def ref_linear_attn(q, k, v, initial_state=None, normalize=False, **kw):
    assert initial_state is None
    o, _ = naive_recurrent_linear_attn(q, k, v, kw.get("scale"), normalize=normalize)
    return o.to(v.dtype), ((None, None) if normalize else None)


def ref_delta_rule(q, k, v, beta=None, initial_state=None, **kw):
    assert initial_state is None
    q, k, _ = _prologue(q, k, None, kw)
    heads_first = [t.transpose(1, 2) for t in (q, k, v.float(), beta.float())]
    o, _ = delta_rule_recurrence(*heads_first, output_final_state=False)
    return o.transpose(1, 2).to(v.dtype), None


# (layer module, class, constructor kwargs, reference, the layer module's op names)
LAYERS = {
    "gdn": ("gated_deltanet", "GatedDeltaNet", dict(head_dim=16, use_short_conv=False), ref_gdn,
            ("chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")),
    "kda": ("kda", "KimiDeltaAttention", dict(head_dim=16, use_short_conv=False), ref_kda,
            ("chunk_kda", "fused_recurrent_kda")),
    "kda_lower_bound": ("kda", "KimiDeltaAttention",
                        dict(head_dim=16, use_short_conv=False, safe_gate=True, lower_bound=-5.0),
                        ref_kda, ("chunk_kda", "fused_recurrent_kda")),
    "gla": ("gla", "GatedLinearAttention", {}, ref_gla, ("chunk_gla", "fused_recurrent_gla")),
    "simple_gla": ("simple_gla", "SimpleGatedLinearAttention", dict(use_short_conv=False),
                   ref_simple_gla, ("chunk_simple_gla", "fused_recurrent_simple_gla")),
    "linear_attn": ("linear_attn", "LinearAttention", {}, ref_linear_attn,
                    ("chunk_linear_attn", "fused_recurrent_linear_attn")),
    "linear_attn_norm": ("linear_attn", "LinearAttention", dict(do_feature_map_norm=True),
                         ref_linear_attn, ("chunk_linear_attn", "fused_recurrent_linear_attn")),
    "deltanet": ("delta_net", "DeltaNet", dict(use_short_conv=False), ref_delta_rule,
                 ("chunk_delta_rule", "fused_recurrent_delta_rule")),
}


def build(name):
    module_name, cls_name, kwargs, ref, ops = LAYERS[name]
    module = importlib.import_module(f"fla.layers.{module_name}")
    torch.manual_seed(0)
    layer = use_torch_modules(
        getattr(module, cls_name)(hidden_size=HIDDEN, num_heads=HEADS, **kwargs))
    return module, layer, ref, ops


def tolerance(T, layer):
    """fp32 token-serial reference vs kcv's fp64: each output sums ~T*K fp32-rounded terms."""
    K = max(getattr(layer, "head_k_dim", 0) or 0, getattr(layer, "head_dim", 0) or 0, 16)
    return 4 * T * K * torch.finfo(torch.float32).eps


def count_kcv_calls(monkeypatch, ops):
    calls = []
    for op in ops:
        original = getattr(backend.KcvBackend, op)

        def counted(self, *args, _original=original, _op=op, **kwargs):
            calls.append(_op)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(backend.KcvBackend, op, counted)
    return calls


@pytest.mark.parametrize("name", list(LAYERS))
def test_training_path_matches_fla_reference(name, monkeypatch):
    module, layer, ref, ops = build(name)
    x = torch.randn(2, T_TRAIN, HIDDEN, generator=torch.Generator().manual_seed(1))
    calls = count_kcv_calls(monkeypatch, ops)
    y_kcv = layer(x)[0]
    y_kcv.square().sum().backward()
    g_kcv = {n: p.grad.clone() for n, p in layer.named_parameters() if p.grad is not None}
    assert calls == [ops[0]], calls
    layer.zero_grad()
    for op in ops:
        monkeypatch.setattr(module, op, ref)
    y_ref = layer(x)[0]
    y_ref.square().sum().backward()
    tol = tolerance(T_TRAIN, layer)
    torch.testing.assert_close(y_kcv, y_ref, rtol=tol, atol=tol)
    assert g_kcv, "no parameter received a gradient"
    # Gradients are compared against their own scale: a small denominator (normalize=True) makes
    # single elements ill-conditioned in both runs alike.
    for n, p in layer.named_parameters():
        if n in g_kcv:
            scale = float(p.grad.abs().max()) + 1.0
            torch.testing.assert_close(g_kcv[n], p.grad, rtol=10 * tol, atol=10 * tol * scale,
                                       msg=lambda m, n=n: f"{n}: {m}")


@pytest.mark.parametrize("name", list(LAYERS))
def test_decode_path_matches_fla_reference(name, monkeypatch):
    module, layer, ref, ops = build(name)
    layer.eval()
    x = torch.randn(2, T_DECODE, HIDDEN, generator=torch.Generator().manual_seed(2))
    calls = count_kcv_calls(monkeypatch, ops)
    with torch.no_grad():
        y_kcv = layer(x)[0]
        assert calls == [ops[1]], calls
        for op in ops:
            monkeypatch.setattr(module, op, ref)
        y_ref = layer(x)[0]
    tol = tolerance(T_DECODE, layer)
    torch.testing.assert_close(y_kcv, y_ref, rtol=tol, atol=tol)


def test_every_op_is_registered_once():
    """Each fla op named in kcv.glr.fla.OPS, looked up where fla's layers find it, dispatches."""
    for module_name, name, _ in backend.OPS:
        fn = getattr(importlib.import_module(module_name.rsplit(".", 1)[0]), name)
        assert fn is getattr(importlib.import_module(module_name), name), name


def test_verifier_declines_what_kcv_does_not_do():
    q = torch.zeros(1, 4, 2, 16)
    v = torch.zeros(1, 4, 2, 16)
    assert backend.decline_reason("chunk_kda", dict(q=q, v=v)) is None
    for key, value in (("cp_context", object()), ("return_intermediate_states", True),
                       ("use_graph", True), ("gv", v), ("reverse", True)):
        assert key in backend.decline_reason("chunk_kda", dict(q=q, v=v, **{key: value}))
    assert "one gate" in backend.decline_reason(
        "fused_recurrent_gated_delta_rule", dict(q=q, v=v, g=v[..., 0], gk=v))
    big = torch.zeros(1, 4, 2, 300)
    assert "K, V <= 256" in backend.decline_reason("chunk_gla", dict(q=big, v=v))
    meta = torch.zeros(1, 4, 2, 16, device="meta")
    assert "meta" in backend.decline_reason("chunk_gla", dict(q=meta, v=meta))
    ok, reason = backend.KcvBackend().verify("chunk_gla", q, q, v, v, bogus=1)
    assert not ok and "bogus" in reason
