"""Shared helpers of the fla comparison scripts (glr/check/gates_vs_fla.py, bench/glr/bench.py):
fla-like bf16 inputs for each member (GVA and K != V included), the calls into kcv.glr and into
fla with the same arguments, fla's error metric, the in-process lifting of fla's
Hopper/Triton<3.7.1 guard, and three ways to cut the cost of fla's Triton autotuning, which is
what made the earlier device runs time out (it compiles and benchmarks every config of every
kernel, one after the other, for each new head count or head dim):
- first_fit_autotune (accuracy runs): the first config of each kernel that fits, no benchmarking;
- compile_shard_autotune (benchmark precompilation): processes that each compile one share of
  the configs into Triton's on-disk cache, in parallel;
- quick_autotune_bench (benchmark): a shorter per-config timing budget for the autotuners; every
  config is still timed and the fastest one kept.
"""

import os

import torch

MEMBERS = ["gdn", "kda", "gla", "ssd", "la", "deltanet"]
LIMITS = {"o": 0.005, "ht": 0.005, "dq": 0.008, "dk": 0.008, "dv": 0.008, "dh0": 0.008,
          "dbeta": 0.02, "dg": 0.02}
GUARD_NOTE = ("fla v0.5.x refuses the gated backward on Hopper with Triton < 3.7.1 (RuntimeError in "
              "fla/ops/common/chunk_o.py, fla issue #640: known miscompile). This run set "
              "fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1 = True in-process to lift the guard, so "
              "fla's gated backward figures (GDN, SSD/simple GLA, and any path through "
              "chunk_bwd_dqkwg with g) come from the known-miscompiled path. "
              "FLA_DISABLE_BACKEND_DISPATCH=1 (pure Triton).")


def _config_errors():
    """The exceptions with which Triton rejects a config that does not fit (resources, compile
    asserts, ptxas)."""
    errors = []
    for mod, name in (("triton.runtime.errors", "OutOfResources"),
                      ("triton.compiler.errors", "CompileTimeAssertionFailure"),
                      ("triton.runtime.errors", "PTXASError")):
        try:
            errors.append(getattr(__import__(mod, fromlist=[name]), name))
        except (ImportError, AttributeError):
            pass
    return tuple(errors) or (RuntimeError,)


def _patch_autotuner(pick, tag):
    """Replaces Autotuner.run (fla's CachedAutotuner calls it through super()) by: run the
    configs pick(configs) returns one at a time, as single-config autotuners (no benchmarking),
    skipping those that do not fit; return the last successful run's result. When none of the
    picked configs fits, fall back to the first config that does."""
    from triton.runtime.autotuner import Autotuner
    if getattr(Autotuner, "_kcv_patch", None):
        return
    skip = _config_errors()
    original = Autotuner.run

    def run(self, *args, **kwargs):
        configs = self.configs
        done, result, last = False, None, None
        for group in (pick(configs), configs):
            for cfg in list(group):
                self.configs = [cfg]
                try:
                    result, done = original(self, *args, **kwargs), True
                except skip as e:  # this config does not fit: try the next one
                    last = e
                finally:
                    self.configs = configs
                if done and group is configs:
                    return result
            if done:
                return result
        raise last

    Autotuner.run = run
    Autotuner._kcv_patch = tag


def first_fit_autotune():
    """Makes every Triton autotuner (fla's included) run the first of its configs that compiles
    and fits the GPU instead of benchmarking all of them: one compile per kernel specialization.
    Results of a correct kernel do not depend on the config beyond rounding order. Returns a
    note for the report."""
    _patch_autotuner(lambda configs: configs[:1], "first-fit")
    return FIRST_FIT_NOTE


def compile_shard_autotune(shard, shards):
    """Benchmark precompilation: every autotuner runs (and so compiles into Triton's on-disk
    cache) the configs whose index is shard mod shards, without timing them. Several processes,
    one per shard, compile all configs in parallel; the timing process then autotunes normally
    (every config benchmarked) and finds every kernel already compiled."""
    _patch_autotuner(lambda configs: [c for i, c in enumerate(configs) if i % shards == shard],
                     f"shard {shard}/{shards}")


def quick_autotune_bench(warmup_ms, rep_ms):
    """Shortens the time budget Triton's autotuners spend per config (their default do_bench
    budget is warmup 25 ms, rep 100 ms): they call triton.testing.do_bench without warmup/rep
    (through the driver's get_benchmarker, looked up at call time). Explicit warmup/rep
    arguments (the benchmark's own timings) are passed through. Call before importing fla.
    Returns the original do_bench."""
    import triton.testing as tt
    original = getattr(tt, "_kcv_original_do_bench", tt.do_bench)

    def do_bench(fn, warmup=None, rep=None, *args, **kwargs):
        return original(fn, warmup_ms if warmup is None else warmup,
                        rep_ms if rep is None else rep, *args, **kwargs)

    tt._kcv_original_do_bench = original
    tt.do_bench = do_bench
    return original


FIRST_FIT_NOTE = ("fla's Triton autotuners ran in first-fit mode for this accuracy run (the first "
                  "config of each kernel that compiles and fits, no benchmarking of the others), "
                  "so fla's figures come from one valid config per kernel, not its fastest one.")


def load_fla(first_fit=False):
    """Imports fla, lifts the guard; returns (module dict of the six ops, a note). first_fit:
    see first_fit_autotune (set before the first fla kernel runs)."""
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    fit_note = first_fit_autotune() if first_fit else ""
    import fla.ops.common.chunk_o as chunk_o
    lifted = not chunk_o.TRITON_ABOVE_3_7_1
    chunk_o.TRITON_ABOVE_3_7_1 = True
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gla import chunk_gla
    from fla.ops.kda import chunk_kda
    from fla.ops.linear_attn import chunk_linear_attn
    from fla.ops.simple_gla import chunk_simple_gla
    import triton
    import fla
    note = (f"fla {getattr(fla, '__version__', '?')}, triton {triton.__version__}, "
            f"torch {torch.__version__}. ")
    note += GUARD_NOTE if lifted else "fla's Hopper guard was not active here (nothing lifted)."
    if fit_note:
        note += " " + fit_note
    ops = {"gdn": chunk_gated_delta_rule, "kda": chunk_kda, "gla": chunk_gla,
           "ssd": chunk_simple_gla, "la": chunk_linear_attn, "deltanet": chunk_delta_rule}
    return ops, note


def load_flash_qla(auto_cp=False):
    """FlashQLA's GDN op (flash_qla.chunk_gated_delta_rule, what fla's backend dispatch calls) with
    fla's keyword arguments; raises ImportError when flash_qla is absent. Returns ({"gdn": op}, a
    note). auto_cp=False runs its exact path: the intra-card context parallelism that fla's
    backend turns on (auto_cp=True) warms chunks up from truncated decays, an approximation by
    design."""
    import flash_qla

    def gdn(q, k, v, g, beta, initial_state=None, output_final_state=False, cu_seqlens=None):
        return flash_qla.chunk_gated_delta_rule(
            q=q, k=k, v=v, g=g, beta=beta, scale=q.shape[-1] ** -0.5,
            initial_state=initial_state, output_final_state=output_final_state,
            use_qk_l2norm_in_kernel=False, state_v_first=False, cu_seqlens=cu_seqlens,
            auto_cp=auto_cp)

    version = getattr(flash_qla, "__version__", "?")
    try:
        import tilelang
        version += f", tilelang {getattr(tilelang, '__version__', '?')}"
    except ImportError:  # flash_qla imports it: not reached
        pass
    return {"gdn": gdn}, (f"FlashQLA {version}: flash_qla.chunk_gated_delta_rule(auto_cp="
                          f"{auto_cp}), GDN with K = V = 128 only.")


def make_inputs(member, B, T, H, D, seed, device="cuda", cu_seqlens=None, h0=True, HV=None,
                V=None):
    """fla-like inputs: l2-normalised q,k (bf16) [B,T,H,D], v bf16 [B,T,HV,V], beta = sigmoid
    (bf16), g = a negative logsigmoid log-decay (fp32), h0 fp32 [N,HV,D,V], cotangents do (bf16)
    and dht (fp32). HV (value heads, GVA) defaults to H and V to D. The draws are made on the
    CPU, so every device gets the same inputs for a seed."""
    HV = H if HV is None else HV
    V = D if V is None else V
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float32)  # noqa
    bf = torch.bfloat16
    q = torch.nn.functional.normalize(r(B, T, H, D), dim=-1).to(bf)
    k = torch.nn.functional.normalize(r(B, T, H, D), dim=-1).to(bf)
    v = r(B, T, HV, V).to(bf)
    g = beta = None
    if member in ("gdn", "ssd"):
        g = torch.nn.functional.logsigmoid(r(B, T, HV)) / 16
    elif member in ("kda", "gla"):
        g = torch.nn.functional.logsigmoid(r(B, T, HV, D)) / 16
    if member in ("gdn", "kda", "deltanet"):
        beta = torch.sigmoid(r(B, T, HV)).to(bf)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    s0 = r(N, HV, D, V) * 0.1 if h0 else None
    do = r(B, T, HV, V).to(bf)
    dht = r(N, HV, D, V)
    x = dict(q=q, k=k, v=v, g=g, beta=beta, h0=s0, do=do, dht=dht)
    return {n: (None if t is None else t.to(device)) for n, t in x.items()}


def call(ops, member, x, cu_seqlens=None):
    """Calls one implementation (kcv.glr or fla) with fla's keyword arguments."""
    q, k, v, g, beta, h0 = x["q"], x["k"], x["v"], x["g"], x["beta"], x["h0"]
    kw = dict(initial_state=h0, output_final_state=True, cu_seqlens=cu_seqlens)
    if member == "gdn":
        return ops["gdn"](q, k, v, g, beta, **kw)
    if member == "kda":
        return ops["kda"](q, k, v, g, beta, **kw)
    if member == "gla":
        return ops["gla"](q, k, v, g, **kw)
    if member == "ssd":
        return ops["ssd"](q, k, v, g=g, **kw)
    if member == "deltanet":
        return ops["deltanet"](q, k, v, beta, **kw)
    return ops["la"](q, k, v, normalize=False, **kw)


def kcv_ops():
    import kcv.glr as glr
    return {"gdn": glr.chunk_gated_delta_rule, "kda": glr.chunk_kda, "gla": glr.chunk_gla,
            "ssd": glr.chunk_simple_gla, "la": glr.chunk_linear_attn,
            "deltanet": glr.chunk_delta_rule}


def leaves(x):
    return [n for n in ("q", "k", "v", "g", "beta", "h0") if x[n] is not None]


def fwd_bwd(ops, member, x, cu_seqlens=None):
    """Forward + backward; returns a dict of o, ht and the gradients (detached)."""
    y = {n: (x[n].detach().clone().requires_grad_() if n in leaves(x) else x[n]) for n in x}
    o, ht = call(ops, member, y, cu_seqlens)
    torch.autograd.backward((o, ht), (y["do"].to(o.dtype), y["dht"].to(ht.dtype)))
    out = {"o": o.detach(), "ht": ht.detach()}
    for n, gname in (("q", "dq"), ("k", "dk"), ("v", "dv"), ("g", "dg"), ("beta", "dbeta"),
                     ("h0", "dh0")):
        if n in leaves(x):
            out[gname] = y[n].grad.detach()
    return out


def err_ratio(ref, x):
    """fla's metric: RMS(ref - x) / RMS(ref), in float64."""
    ref = ref.double().cpu()
    x = x.double().cpu()
    den = ref.pow(2).mean().sqrt().item()
    num = (ref - x).pow(2).mean().sqrt().item()
    if (ref - x).abs().max().item() <= 1e-6:
        return 0.0
    return num / den if den > 0 else float("inf")
