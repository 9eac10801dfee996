"""Times fla's chunk_gated_delta_rule forward (pure Triton, FLA_DISABLE_BACKEND_DISPATCH=1) at the
shapes glr_dev_check times, for the table of glr/dev/run_on_h200.sh: B1·T8192·H32 and
B4·T4096·H16, D = 128, bf16 q/k/v/β, fp32 g and h0, inputs drawn as glr_dev_check draws them
(l2-normalised q, k; g = logsigmoid(N(0,1)); β = σ(N(0,1))). CUDA events around each call,
median of --reps calls after warm-up calls (the first call autotunes; the autotuners' per-config
budget is shortened to warmup 5 ms / rep 20 ms through glr/check/glr_cases.quick_autotune_bench,
every config still timed). Writes one "fla<TAB>shape<TAB>ms" line per shape to --out and prints
it; exits 3 when fla does not import.

  PYTHONPATH=/tmp/site python3 glr/dev/time_fla.py --out fla.tsv
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "check"))

SHAPES = [(1, 8192, 32), (4, 4096, 16)]


def inputs(B, T, H, D, torch):
    gen = torch.Generator(device="cuda").manual_seed(1000 + B)
    dev = dict(device="cuda", generator=gen)
    q = torch.nn.functional.normalize(torch.randn(B, T, H, D, **dev), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(B, T, H, D, **dev), dim=-1).bfloat16()
    v = torch.randn(B, T, H, D, **dev).bfloat16()
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, H, **dev)).float()
    beta = torch.sigmoid(torch.randn(B, T, H, **dev)).bfloat16()
    h0 = 0.5 * torch.randn(B, H, D, D, **dev)
    return q, k, v, g, beta, h0


def median_ms(fn, reps, torch):
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="fla.tsv")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    try:
        import torch
        import glr_cases as gc
        gc.quick_autotune_bench(5, 20)
        import fla
        import triton
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    except Exception as e:  # noqa: BLE001 - report and skip cleanly
        print(f"fla not importable here ({type(e).__name__}: {e}); fla not timed")
        return 3
    print(f"fla {getattr(fla, '__version__', '?')}, triton {triton.__version__}, "
          f"torch {torch.__version__}, FLA_DISABLE_BACKEND_DISPATCH="
          f"{os.environ['FLA_DISABLE_BACKEND_DISPATCH']}", flush=True)
    with open(args.out, "w") as out:
        for B, T, H in SHAPES:
            q, k, v, g, beta, h0 = inputs(B, T, H, 128, torch)

            def fwd():
                with torch.no_grad():
                    chunk_gated_delta_rule(q, k, v, g, beta, scale=128 ** -0.5, initial_state=h0,
                                           output_final_state=True)

            t0 = time.time()
            for _ in range(3):
                fwd()
            torch.cuda.synchronize()
            warm = time.time() - t0
            ms = median_ms(fwd, args.reps, torch)
            shape = f"B{B} T{T} H{H} D128"
            print(f"fla\t{shape}\t{ms:.3f}\t(first calls incl. autotuning {warm:.1f} s)",
                  flush=True)
            out.write(f"fla\t{shape}\t{ms:.3f}\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
