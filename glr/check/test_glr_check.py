"""CPU tests of the Python side of glr/check (gates_vs_fla.py and its helpers): the token-serial
NaN oracle against the fp64 chunked reference, the error model's fixed numbers, the three judges
(kcv._core's or the mirror) on outputs with known defects, the cuobjdump parser, and the
autotuner patches on a fake Triton autotuner. Needs torch and kcv._glr on the path:

  PYTHONPATH=<dir with kcv> python -m pytest -q glr/check/test_glr_check.py
"""

import math
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("kcv.glr")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import error_model as em  # noqa: E402
import gate_judge as gj  # noqa: E402
import glr_cases as gc  # noqa: E402
import token_serial as ts  # noqa: E402
import verification_report as vr  # noqa: E402

torch.set_num_threads(1)


@pytest.mark.parametrize("member", gc.MEMBERS)
def test_token_serial_matches_chunked_reference_with_gva_and_varlen(member):
    cu = [0, 5, 70, 81]
    x = gc.make_inputs(member, 1, 81, 1, 16, seed=3, device="cpu", cu_seqlens=cu, HV=2, V=8)
    x64 = {n: (None if t is None else t.double()) for n, t in x.items()}
    a = ts.fwd_bwd(x, cu)
    b = gc.fwd_bwd(gc.kcv_ops(), member, x64, torch.tensor(cu))
    assert set(a) == set(b)
    for n in a:
        assert torch.allclose(a[n], b[n], rtol=1e-10, atol=1e-12), n


def test_token_serial_poisons_o_only_from_the_nan_token():
    x = gc.make_inputs("gla", 1, 100, 1, 8, seed=1, device="cpu")
    x["v"][0, 70, 0, :] = float("nan")
    y = ts.fwd_bwd(x)
    nan_tokens = torch.isnan(y["o"][0, :, 0]).any(-1).nonzero().flatten().tolist()
    assert nan_tokens == list(range(70, 100))
    assert not torch.isnan(y["dv"]).any() and not torch.isnan(y["dh0"]).any()


def test_tau_is_the_documented_formula():
    ref = torch.full((1, 4, 1, 2), 2.0, dtype=torch.float64)
    t = em.tau(ref, "o", L=4, K=2, V=2, G=0.0)
    want = 2.0 ** -8 * 2.0 + 4 * 2.0 ** -24 * math.sqrt(4 + 2 + 2 + 64) * 2 * 2.0
    assert torch.allclose(t, torch.full_like(ref, want))
    assert em.max_chunk_log_decay(torch.full((1, 130, 1), -0.5)) == pytest.approx(32.0)


def test_slice_rms_is_per_sequence_and_head():
    ref = torch.zeros(1, 4, 2, 1, dtype=torch.float64)
    ref[0, :2, 0] = 3.0   # sequence 0, head 0
    ref[0, 2:, 1] = 4.0   # sequence 1, head 1
    r = em.slice_rms(ref, "o", cu=[0, 2, 4])
    assert r[0, 0, 0, 0] == 3.0 and r[0, 0, 1, 0] == 0.0
    assert r[0, 3, 1, 0] == 4.0 and r[0, 3, 0, 0] == 0.0


def _oracle(ref, tau_value=1e-3):
    return [gj.oracle_entry("f32", ref, torch.full_like(ref, tau_value))]


def test_judges_pass_and_fail_where_they_should():
    ref = torch.linspace(-1, 1, 64, dtype=torch.float64).reshape(8, 8)
    good = gj.to_array(ref.float())
    bad = good.copy()
    bad[3, 3] += 0.5
    assert gj.judge("CMP-01", [[good]], _oracle(ref), [])["verdict"] == "pass"
    assert gj.judge("CMP-01", [[bad]], _oracle(ref), [])["verdict"] == "fail"
    assert gj.judge("ORD-02", [[good], [good.copy()]], _oracle(ref), [])["verdict"] == "pass"
    assert gj.judge("ORD-02", [[good], [bad]], _oracle(ref), [])["verdict"] == "fail"
    nan_ref = ref.clone()
    nan_ref[2, 2] = float("nan")
    nan_out = gj.to_array(nan_ref.float())
    assert gj.judge("EXC-01", [[nan_out]], _oracle(nan_ref), [])["verdict"] == "pass"
    assert gj.judge("EXC-01", [[good]], _oracle(nan_ref), [])["verdict"] == "fail"


def test_bf16_outputs_travel_as_bits():
    t = torch.tensor([1.0, -2.5, 3.0e-3], dtype=torch.bfloat16)
    a = gj.to_array(t)
    assert a.dtype == np.uint16
    assert np.array_equal(gj._values(a, "bf16"), t.double().numpy())


def test_cuobjdump_parser_reads_every_function_once():
    text = """
Fatbin elf code:
================
arch = sm_90a
Resource usage:
 Common:
  GLOBAL:0
 Function _Z3fooPf:
  REG:74 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:604 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z3barPf:
  REG:40 STACK:16 SHARED:1024 LOCAL:8 CONSTANT[0]:604 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z3fooPf:
  REG:74 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:604 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
    rows = vr.parse_res_usage(text)
    assert len(rows) == 2
    assert ("bar(float*)", 40, 16, 1024, 8) in rows or ("_Z3barPf", 40, 16, 1024, 8) in rows


def test_autotuner_patch_runs_the_shard_and_skips_configs_that_do_not_fit():
    triton = pytest.importorskip("triton")
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.errors import OutOfResources
    saved = Autotuner.run, getattr(Autotuner, "_kcv_patch", None)
    calls = []

    def fake(self, *a, **k):
        calls.append(self.configs[0])
        if self.configs[0] in self.bad:
            raise OutOfResources(1, 2, "shared memory")
        return self.configs[0]

    try:
        Autotuner.run = fake
        Autotuner._kcv_patch = None
        gc.compile_shard_autotune(0, 2)

        class Fake:
            pass

        f = Fake()
        f.configs, f.bad = [0, 1, 2, 3], {0}
        assert Autotuner.run(f) == 2 and calls == [0, 2] and f.configs == [0, 1, 2, 3]
        calls.clear()
        f.bad = {0, 2}
        assert Autotuner.run(f) == 1 and calls == [0, 2, 0, 1]
    finally:
        Autotuner.run, Autotuner._kcv_patch = saved
    del triton


# ------------------------------------------------------------------ dg's term-based S


def _chunk_form_dg(x, cu, bf16_products=False):
    """ssd's dg evaluated in fp32 along the chunk form of error_model's docstring: per-value-head
    dq, dk (fp32 token-serial autograd), row sums q.dq - k.dk, chunk-local reverse cumsum, plus
    the fp32 boundary products <S_e, dS_e>. bf16_products: round each q*dq, k*dk product to bf16
    first (a deliberately wrong kernel)."""
    f = {n: (None if x[n] is None else x[n].detach().float()) for n in x}
    B, T, H, K = f["q"].shape
    HV = f["v"].shape[2]
    heads = torch.arange(HV) // (HV // H)
    y = {n: (f[n][:, :, heads].clone() if n in ("q", "k") else f[n]) for n in ("q", "k")}
    y = {n: t.requires_grad_() for n, t in y.items()}
    o, ht = ts.forward(y["q"], y["k"], f["v"], f["g"], None, f["h0"], cu, K ** -0.5)
    torch.autograd.backward((o, ht), (f["do"], f["dht"]))
    a, b = y["q"].detach() * y["q"].grad, y["k"].detach() * y["k"].grad
    if bf16_products:
        a, b = a.bfloat16().float(), b.bfloat16().float()
    rows = a.sum(-1) - b.sum(-1)
    bsum, _ = em.chunk_boundary_terms(x, cu, dtype=torch.float32)
    return em.chunk_revcumsum(rows, B, T, cu) + bsum


def _ratio(dg, ref, cu, L, K, V, G, terms):
    t = em.tau(ref, "dg", L=L, K=K, V=V, G=G, cu=cu, terms=terms)
    return float(((dg.double() - ref).abs() / t).max())


@pytest.mark.parametrize("member", ["ssd", "gla", "gdn"])
def test_dg_terms_sum_to_the_reference_dg(member):
    cu = [0, 1, 3, 70, 140]
    x = gc.make_inputs(member, 1, 140, 1, 16, seed=5, device="cpu", cu_seqlens=cu, HV=2, V=8)
    ref = gc.fwd_bwd(gc.kcv_ops(), member, {n: (None if t is None else t.double())
                                          for n, t in x.items()}, torch.tensor(cu))
    S, total = em.dg_terms(member, x, cu)
    assert torch.allclose(total, ref["dg"], rtol=1e-9, atol=1e-11)
    assert bool((S >= ref["dg"].abs()).all())


@pytest.mark.parametrize("member", ["ssd", "gla", "gdn", "kda"])
def test_dg_tau_with_terms_is_never_below_the_old_one(member):
    cu = [0, 1, 3, 70, 140]
    x = gc.make_inputs(member, 1, 140, 1, 16, seed=11, device="cpu", cu_seqlens=cu, HV=2, V=8)
    ref = gc.fwd_bwd(gc.kcv_ops(), member, {n: (None if t is None else t.double())
                                          for n, t in x.items()}, torch.tensor(cu))["dg"]
    S, _ = em.dg_terms(member, x, cu)
    kw = dict(L=67, K=16, V=8, G=em.max_chunk_log_decay(x["g"], cu), cu=cu)
    old, new = em.tau(ref, "dg", **kw), em.tau(ref, "dg", terms=S, **kw)
    assert bool((new >= old).all()) and bool((new > old).any())
    with pytest.raises(ValueError, match="terms"):
        em.tau(ref, "dq", terms=S, **kw)


def test_dg_of_the_h200_failing_case_passes_with_terms_and_a_wrong_dg_still_fails():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gates_vs_fla as gv
    case = [c for c in gv.CASES if c[0] == "varlen-d128-gva"][0]
    name, B, T, H, HV, K, V, cu, L = gv._dims(case)
    x = gv._case_inputs("ssd", case, "cpu")
    ref = gc.fwd_bwd(gc.kcv_ops(), "ssd", {n: (None if t is None else t.double())
                                          for n, t in x.items()}, torch.tensor(cu))["dg"]
    G = em.max_chunk_log_decay(x["g"], cu)
    S, _ = em.dg_terms("ssd", x, cu)
    fp32 = _chunk_form_dg(x, cu)
    assert _ratio(fp32, ref, cu, L, K, V, G, None) > 1.0  # the old S: what the H200 run saw
    assert _ratio(fp32, ref, cu, L, K, V, G, S) < 1.0
    assert _ratio(ref.float(), ref, cu, L, K, V, G, S) < 0.05  # the reference itself, in fp32
    wrong = _chunk_form_dg(x, cu, bf16_products=True)
    assert _ratio(wrong, ref, cu, L, K, V, G, S) > 1.0
