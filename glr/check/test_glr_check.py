"""CPU tests of the Python side of glr/check (gates_vs_fla.py and its helpers): the error model's
adapter over kcv._glr (the formula itself is tested in C++, glr/tests/error_model_test.cpp), the
C++ judges through kcv._core on outputs with known defects, the precision-contract judging of an
implementation, the cuobjdump parser, and the autotuner patches on a fake Triton autotuner.
Needs torch, kcv._glr and kcv._core on the path:

  PYTHONPATH=<dir with kcv> python -m pytest -q glr/check/test_glr_check.py
"""

import math
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("kcv.glr")
pytest.importorskip("kcv._core")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import error_model as em  # noqa: E402
import gate_judge as gj  # noqa: E402
import glr_cases as gc  # noqa: E402
import verification_report as vr  # noqa: E402

torch.set_num_threads(1)


def test_tau_is_the_documented_formula():
    ref = torch.full((1, 4, 1, 2), 2.0, dtype=torch.float64)
    case = em.Case(dims=(4, 1, 1, 2, 2), cu=[], gate_width=0, N=4 + 2 + 2 + 64, G=0.0)
    t = em.tau(ref, "o", case)
    want = 2.0 ** -8 * 2.0 + 4 * 2.0 ** -24 * math.sqrt(4 + 2 + 2 + 64) * 2 * 2.0
    assert torch.allclose(t, torch.full_like(ref, want))
    t = em.tau(ref, "o", case, sigma=torch.full_like(ref, 1e-3))
    assert torch.allclose(t, torch.full_like(ref, want + 4 * 1e-3))
    x = {"q": torch.zeros(1, 130, 1, 2), "v": torch.zeros(1, 130, 1, 3),
         "g": torch.full((1, 130, 1), -0.5)}
    c = em.case(x)
    assert (c.N, c.G) == (130 + 2 + 3 + 64, pytest.approx(32.0))


def test_tau_of_a_batch_is_tau_of_its_packed_sequences():
    x = gc.make_inputs("gla", 2, 70, 1, 8, seed=2, device="cpu", HV=2, V=4)
    ref = torch.randn(2, 70, 2, 4, dtype=torch.float64)
    ref[1] *= 10  # the second sequence's slice has its own scale
    packed = {n: (None if t is None else t.reshape(1, 140, *t.shape[2:])) for n, t in x.items()
              if n not in ("h0", "dht")}
    a = em.tau(ref, "o", em.case(x))
    b = em.tau(ref.reshape(1, 140, 2, 4), "o", em.case(packed, [0, 70, 140]))
    assert torch.equal(a.reshape(-1), b.reshape(-1))
    slice_term = a - 2.0 ** -8 * ref.abs()  # the per-slice part of tau
    assert float(slice_term[1].min()) > 5 * float(slice_term[0].max())


def test_declared_sigma_is_zero_for_fp32_and_bounds_the_bf16_grade():
    x = gc.make_inputs("gdn", 1, 100, 1, 16, seed=4, device="cpu", HV=2, V=8)
    x64 = {n: (None if t is None else t.double()) for n, t in x.items()}
    s32, s16 = em.declared_sigma("gdn", x64, grade="fp32"), em.declared_sigma("gdn", x64)
    assert float(s32["o"].abs().max()) == 0.0 and float(s32["ht"].abs().max()) == 0.0
    assert float(s16["o"].min()) > 0 and float(s16["ht"].min()) > 0
    ref = gc.fwd_bwd(gc.kcv_ops(), "gdn", x64)
    c = em.case(x)
    rel = (s16["o"] / ref["o"].abs().clamp(min=1e-3)).median()
    assert 2.0 ** -12 < float(rel) < 2.0 ** -4  # sigma is a few bf16 roundings of o
    assert bool((em.tau(ref["o"], "o", c, sigma=s16["o"]) > em.tau(ref["o"], "o", c)).all())


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
    widened = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert np.array_equal(widened, t.double().numpy())
    assert gj.judge_name() == "kcv._core.judge (C++ gate judges)"


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


def _revcumsum(r, cu):
    """Reverse cumulative sum along tokens within each 64-token chunk of each sequence."""
    out = torch.empty_like(r)
    for lo, hi in zip(cu[:-1], cu[1:]):
        for c0 in range(lo, hi, em.CHUNK):
            c1 = min(c0 + em.CHUNK, hi)
            out[0, c0:c1] = r[0, c0:c1].flip(0).cumsum(0).flip(0)
    return out


def _boundary_terms(x, cu):
    """fp32, token-serial: for every token t, sum over k, v of S_e * dS_e of t's chunk (e its last
    token, S_e the state after e, dS_e = dL/dS_e through the later tokens; dht at a sequence end),
    for ssd (scalar gate, no delta rule)."""
    f = {n: (None if x[n] is None else x[n].detach().float()) for n in x}
    q, k, v, g, do = f["q"], f["k"], f["v"], f["g"], f["do"]
    H, HV, K = q.shape[2], v.shape[2], q.shape[3]
    heads = torch.arange(HV) // (HV // H)
    tot = torch.zeros(1, q.shape[1], HV)
    for n, (lo, hi) in enumerate(zip(cu[:-1], cu[1:])):
        S = f["h0"][n].clone()
        ends = set(range(min(lo + em.CHUNK, hi) - 1, hi, em.CHUNK)) | {hi - 1}
        states = {}
        for t in range(lo, hi):
            S = S * g[0, t].exp()[:, None, None] + k[0, t][heads][:, :, None] * v[0, t][:, None, :]
            if t in ends:
                states[t] = S.clone()
        dS = f["dht"][n].clone()
        for t in range(hi - 1, lo - 1, -1):
            if t in states:
                c0 = lo + (t - lo) // em.CHUNK * em.CHUNK
                tot[0, c0:t + 1] = (states[t] * dS).sum(-1).sum(-1)  # over V, then K
            dS = dS + K ** -0.5 * q[0, t][heads][:, :, None] * do[0, t][:, None, :]
            dS = dS * g[0, t].exp()[:, None, None]
    return tot


def _recurrence(q, k, v, g, h0, cu, scale):
    """A kernel stand-in, not an oracle: the scalar-gate recurrence without the delta rule, token by
    token in the inputs' dtype (fp32 here) and differentiable by autograd; (o, ht)."""
    HV, H = v.shape[2], q.shape[2]
    heads = torch.arange(HV) // (HV // H)
    rows, states = [], []
    for n, (lo, hi) in enumerate(zip(cu[:-1], cu[1:])):
        S = h0[n]
        for t in range(lo, hi):
            S = S * g[0, t].exp()[:, None, None] + k[0, t][heads][:, :, None] * v[0, t][:, None, :]
            rows.append(scale * torch.einsum("hk,hkv->hv", q[0, t][heads], S))
        states.append(S)
    return torch.stack(rows)[None], torch.stack(states)


def _chunk_form_dg(x, cu, bf16_products=False):
    """ssd's dg evaluated in fp32 along the chunk form (a kernel stand-in): per-value-head dq, dk
    (fp32 token-serial autograd), row sums q.dq - k.dk, chunk-local reverse cumsum, plus the fp32
    boundary products <S_e, dS_e>. bf16_products: round each q*dq, k*dk product to bf16 first (a
    deliberately wrong kernel)."""
    f = {n: (None if x[n] is None else x[n].detach().float()) for n in x}
    H, HV, K = f["q"].shape[2], f["v"].shape[2], f["q"].shape[3]
    heads = torch.arange(HV) // (HV // H)
    y = {n: f[n][:, :, heads].clone().requires_grad_() for n in ("q", "k")}
    o, ht = _recurrence(y["q"], y["k"], f["v"], f["g"], f["h0"], cu, K ** -0.5)
    torch.autograd.backward((o, ht), (f["do"], f["dht"]))
    a, b = y["q"].detach() * y["q"].grad, y["k"].detach() * y["k"].grad
    if bf16_products:
        a, b = a.bfloat16().float(), b.bfloat16().float()
    return _revcumsum(a.sum(-1) - b.sum(-1), cu) + _boundary_terms(x, cu)


def _ratio(dg, ref, case, terms):
    t = em.tau(ref, "dg", case, terms)
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
def test_dg_tau_with_terms_is_never_below_the_slice_one(member):
    cu = [0, 1, 3, 70, 140]
    x = gc.make_inputs(member, 1, 140, 1, 16, seed=11, device="cpu", cu_seqlens=cu, HV=2, V=8)
    ref = gc.fwd_bwd(gc.kcv_ops(), member, {n: (None if t is None else t.double())
                                          for n, t in x.items()}, torch.tensor(cu))["dg"]
    S, _ = em.dg_terms(member, x, cu)
    case = em.case(x, cu)
    old, new = em.tau(ref, "dg", case), em.tau(ref, "dg", case, terms=S)
    assert bool((new >= old).all()) and bool((new > old).any())
    with pytest.raises(ValueError, match="terms"):
        em.tau(ref, "dq", case, terms=S)


def test_dg_of_the_h200_failing_case_passes_with_terms_and_a_wrong_dg_still_fails():
    import gates_vs_fla as gv
    case = [c for c in gv.CASES if c[0] == "varlen-d128-gva"][0]
    name, B, T, H, HV, K, V, cu, L = gv._dims(case)
    x = gv._case_inputs("ssd", case, "cpu")
    ref = gc.fwd_bwd(gc.kcv_ops(), "ssd", {n: (None if t is None else t.double())
                                          for n, t in x.items()}, torch.tensor(cu))["dg"]
    model = em.case(x, cu)
    S, _ = em.dg_terms("ssd", x, cu)
    fp32 = _chunk_form_dg(x, cu)
    assert _ratio(fp32, ref, model, None) > 1.0  # the slice S alone: what the H200 run saw
    assert _ratio(fp32, ref, model, S) < 1.0
    assert _ratio(ref.float(), ref, model, S) < 0.05  # the reference itself, in fp32
    wrong = _chunk_form_dg(x, cu, bf16_products=True)
    assert _ratio(wrong, ref, model, S) > 1.0


# ------------------------------------------------------------------ precision contracts


def test_an_implementation_meets_the_strongest_grade_it_passes_everywhere():
    import gates_vs_fla as gv
    x = gc.make_inputs("gdn", 1, 70, 1, 16, seed=6, device="cpu", HV=2, V=8)
    x64 = {n: (None if t is None else t.double()) for n, t in x.items()}
    ref = gc.fwd_bwd(gc.kcv_ops(), "gdn", x64)
    sigma = em.declared_sigma("gdn", x64)
    c = em.case(x)
    names = [n for n in gv.OUTPUTS if n in ref]
    taus = {"fp32": {n: em.tau(ref[n], n, c) for n in names},
            "bf16": {n: em.tau(ref[n], n, c, sigma=sigma[n]) for n in sigma}}
    exact = {n: ref[n].to(torch.bfloat16 if em.OUT_DTYPE[n] == "bf16" else torch.float32)
             for n in names}
    # o off by 2 sigma: beyond the fp32 bound wherever sigma dominates it, inside the bf16 one
    bf16_like = dict(exact, o=(ref["o"] + 2 * sigma["o"]).float())
    worse = dict(exact, o=(ref["o"] + 8 * sigma["o"]).float())
    rows = [{"contracts": {"ours": gv._contracts(exact, ref, taus, names, "exact"),
                           "fla": gv._contracts(bf16_like, ref, taus, names, "bf16-like"),
                           "flashqla": gv._contracts(worse, ref, taus, names, "worse")}}]
    assert vr.contract_met(rows, "ours") == ("fp32", 1)
    assert vr.contract_met(rows, "fla") == ("bf16", 1)
    assert vr.contract_met(rows, "flashqla") == ("none", 1)
    assert rows[0]["contracts"]["fla"]["fp32"]["output_name"] == "o"
    assert rows[0]["contracts"]["fla"]["bf16"]["dtypes"] == {"o": "f32"}
    assert vr.contract_met([{}], "ours") is None
    text = "\n".join(vr.contract_lines([{"member": "gdn", "rows": [dict(rows[0], case="c")]}]))
    assert "| gdn | fp32 (1 cases) | - | bf16 (1 cases) | none (1 cases) |" in text


@pytest.mark.parametrize("member", ["gdn", "ssd", "la", "deltanet", "gla", "kda"])
def test_bf16_contract_judges_the_gradients_with_their_declared_sigma(member):
    # a gradient off by 2 sigma (sigma of the bf16 grade's declared roundings, the C++ term)
    # fails the fp32 bound where sigma dominates it and passes the bf16 one; 8 sigma fails both
    import gates_vs_fla as gv
    x = gc.make_inputs(member, 1, 70, 1, 16, seed=7, device="cpu", HV=2, V=8)
    x64 = {n: (None if t is None else t.double()) for n, t in x.items()}
    ref = gc.fwd_bwd(gc.kcv_ops(), member, x64)
    sigma = em.declared_backward_sigma(member, x64)
    assert set(sigma) == {"dq", "dk", "dv", "dh0"} | ({"dg"} if x["g"] is not None else set()) \
        | ({"dbeta"} if x["beta"] is not None else set())
    zero = em.declared_backward_sigma(member, x64, grade="fp32")
    assert all(float(t.abs().max()) == 0 for t in zero.values())
    c = em.case(x)
    terms = {"dg": em.dg_terms(member, x64)[0]} if "dg" in sigma else {}
    names = [n for n in gv.OUTPUTS if n in ref]
    taus = {"fp32": {n: em.tau(ref[n], n, c, terms.get(n)) for n in names},
            "bf16": {n: em.tau(ref[n], n, c, terms.get(n), sigma=sigma[n]) for n in sigma}}
    exact = {n: ref[n].to(torch.bfloat16 if em.OUT_DTYPE[n] == "bf16" else torch.float32)
             for n in names}
    near = dict(exact, dk=(ref["dk"] + 2 * sigma["dk"]).float())
    far = dict(exact, dk=(ref["dk"] + 8 * sigma["dk"]).float())
    got = {k: gv._contracts(o, ref, taus, names, k) for k, o in
           (("exact", exact), ("near", near), ("far", far))}
    assert got["exact"]["bf16"]["verdict"] == "pass" and "dk" in got["exact"]["bf16"]["outputs"]
    assert got["near"]["fp32"]["verdict"] == "fail" and got["near"]["bf16"]["verdict"] == "pass"
    assert got["far"]["bf16"]["verdict"] == "fail" and got["far"]["bf16"]["output_name"] == "dk"
