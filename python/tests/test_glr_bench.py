"""bench/glr: the FLOP and byte model (roofline.py) on hand-computed cases."""

import importlib.util
import math
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_DIR = os.path.join(REPO, "bench", "glr")
MEMBERS = ["gdn", "kda", "gla", "ssd", "la", "deltanet"]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"kcv_bench_{name}",
                                                  os.path.join(BENCH_DIR, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rl = _load("roofline")


# ------------------------------------------------------------------ the FLOP model


def test_chunk_flops_small_dims_by_hand():
    # c = 2, K = 3, V = 5:
    # linear forward  2c²K + 2c²V + 4cKV = 24 + 40 + 120 = 184
    # linear backward 6c²K + 4c²V + 10cKV = 72 + 80 + 300 = 452
    # delta forward   6c²K + 4c²V + 6cKV + c³/3 = 72 + 80 + 180 + 8/3
    # delta backward  16c²K + 10c²V + 16cKV + 4c³ = 192 + 200 + 480 + 32 = 904
    for m in ("la", "ssd", "gla"):
        assert rl.chunk_flops(m, "fwd", 2, 3, 5) == 184
        assert rl.chunk_flops(m, "bwd", 2, 3, 5) == 452
        assert rl.chunk_flops(m, "fwd+bwd", 2, 3, 5) == 636
    for m in ("deltanet", "gdn", "kda"):
        assert rl.chunk_flops(m, "fwd", 2, 3, 5) == pytest.approx(332 + 8 / 3)
        assert rl.chunk_flops(m, "bwd", 2, 3, 5) == 904


def test_chunk_flops_at_64_128():
    # c = 64, K = V = 128: c²K = 524288, cKV = 1048576, c³ = 262144
    assert rl.chunk_flops("la", "fwd", 64, 128, 128) == 6_291_456
    assert rl.chunk_flops("la", "bwd", 64, 128, 128) == 15_728_640
    assert rl.chunk_flops("gdn", "fwd", 64, 128, 128) == pytest.approx(11_534_336 + 262144 / 3)
    assert rl.chunk_flops("gdn", "bwd", 64, 128, 128) == 31_457_280


def test_products_are_named_matmuls():
    for m in MEMBERS:
        for p in ("fwd", "bwd"):
            prods = rl.products(m, p, 64, 128, 96)
            assert all(len(t) == 4 and t[0] for t in prods)
            assert len({t[0] for t in prods}) == len(prods)
    with pytest.raises(ValueError):
        rl.products("mamba", "fwd", 64, 128, 128)


def test_chunk_lengths_and_varlen_flops():
    assert rl.chunk_lengths([130]) == [64, 64, 2]
    assert rl.chunk_lengths([64, 1, 0]) == [64, 1]
    assert rl.chunk_lengths([100], chunk=32) == [32, 32, 32, 4]
    # two heads, sequences of 65 and 1 tokens: chunks 64, 1, 1
    want = 2 * (rl.chunk_flops("ssd", "fwd", 64, 8, 8) + 2 * rl.chunk_flops("ssd", "fwd", 1, 8, 8))
    assert rl.flops("ssd", [65, 1], 2, 8, 8, "fwd") == want
    # a dense batch is B sequences of T
    assert rl.flops("gdn", [8192], 32, 128, 128, "fwd+bwd") == pytest.approx(
        4096 * (11_534_336 + 262144 / 3 + 31_457_280))


# ------------------------------------------------------------------ the byte model


def test_bytes_by_hand():
    # GDN, 10 tokens in 2 sequences, H = 1, K = 2, V = 3, bf16 q/k/v/o/β, fp32 g and states:
    # q 40, k 40, v 60, g 40, β 20, h0 48 (inputs 248); o 60, ht 48
    t = rl.tensor_bytes("gdn", 10, 2, 1, 2, 3)
    assert t == {"q": 40, "k": 40, "v": 60, "g": 40, "beta": 20, "h0": 48, "o": 60, "ht": 48}
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "fwd") == 356
    # backward: inputs, dO and dht read (248 + 60 + 48), gradients written (248)
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "bwd") == 604
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "fwd+bwd") == 960
    # per-channel gate (KDA, GLA): g is [tokens, HV, K]; LA and DeltaNet have no g
    assert rl.tensor_bytes("gla", 10, 2, 1, 2, 3)["g"] == 80
    assert "beta" not in rl.tensor_bytes("gla", 10, 2, 1, 2, 3)
    assert "g" not in rl.tensor_bytes("deltanet", 10, 2, 1, 2, 3)
    assert rl.tensor_bytes("deltanet", 10, 2, 1, 2, 3)["beta"] == 20
    assert set(rl.tensor_bytes("la", 10, 2, 1, 2, 3)) == {"q", "k", "v", "h0", "o", "ht"}


def test_bytes_at_shape_1():
    # B1·T8192·H32·D128 GDN forward: q,k,v 3·8192·32·128·2, g 8192·32·4, β 8192·32·2,
    # h0 and ht 32·128·128·4 each, o 8192·32·128·2
    want = 3 * 67_108_864 + 1_048_576 + 524_288 + 2 * 2_097_152 + 67_108_864
    assert rl.hbm_bytes("gdn", 8192, 1, 32, 128, 128, "fwd") == want == 274_202_624


def test_achieved():
    tf, gbs, ftf, fbw = rl.achieved(989e9, 4.8e9, 1.0)  # in 1 ms
    assert tf == pytest.approx(989.0) and ftf == pytest.approx(1.0)
    assert gbs == pytest.approx(4800.0) and fbw == pytest.approx(1.0)
    assert all(math.isnan(v) for v in rl.achieved(1.0, 1.0, float("nan")))
    assert all(math.isnan(v) for v in rl.achieved(1.0, 1.0, 0.0))
