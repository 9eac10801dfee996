"""Times fla's chunked kernels (pure Triton, FLA_DISABLE_BACKEND_DISPATCH=1) beside glr_dev_check's
tensor-core kernels, for the tables of glr/dev/run_on_h200.sh: forward and forward + backward of
GDN (chunk_gated_delta_rule), SSD (chunk_simple_gla), LA (chunk_linear_attn) and DeltaNet
(chunk_delta_rule) at B1·T8192·H32 and B4·T4096·H16, D = 128, bf16 q/k/v/β/dO, fp32 g, h0 and
dht (glr_cases.make_inputs). fla's gated backward runs with its Triton < 3.7.1 Hopper guard
lifted (glr_cases.GUARD_NOTE). CUDA events around each call, median of --reps calls after
the first calls (which autotune; the autotuners' per-config budget is shortened to warmup 5 ms /
rep 20 ms through glr_cases.quick_autotune_bench, every config still timed). Members in the
order of --members, shapes in order; one "fla<TAB>member<TAB>shape<TAB>fwd ms<TAB>fwd+bwd ms"
line per pair is written to --out as soon as it is measured, so a run cut short keeps what it
measured. Exits 3 when fla does not import.

  PYTHONPATH=/tmp/site python3 glr/dev/time_fla.py --out fla.tsv
"""

import argparse
import os
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, "..", "check"))
sys.path.insert(0, os.path.join(_here, "..", "..", "bench", "glr"))

SHAPES = [(1, 8192, 32), (4, 4096, 16)]


def median_ms(fn, reps, torch, grads):
    """Median of `reps` calls timed with CUDA events; gradients reset before each call, outside
    the timed region."""
    times = []
    for _ in range(reps):
        for g in grads:
            g.grad = None
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
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--members", default="gdn,ssd,la,deltanet")
    args = ap.parse_args()
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    try:
        import torch
        import glr_cases as gc
        from bench import timers  # bench/glr/bench.py: the same closures as the benchmark
        gc.quick_autotune_bench(5, 20)
        ops, note = gc.load_fla()
        from fla.ops.delta_rule import chunk_delta_rule
        ops["deltanet"] = chunk_delta_rule
    except Exception as e:  # noqa: BLE001 - report and skip cleanly
        print(f"fla not importable here ({type(e).__name__}: {e}); fla not timed")
        return 3
    print(note, f"FLA_DISABLE_BACKEND_DISPATCH={os.environ['FLA_DISABLE_BACKEND_DISPATCH']}",
          flush=True)
    with open(args.out, "w") as out:
        for B, T, H in SHAPES:
            for member in args.members.split(","):
                x = gc.make_inputs(member, B, T, H, 128, seed=1000 + B)
                fwd, fwd_bwd, grads = timers(ops, member, x)
                shape = f"B{B} T{T} H{H} D128"
                try:
                    t0 = time.time()
                    fwd()
                    fwd_bwd()
                    torch.cuda.synchronize()
                    warm = time.time() - t0
                    f_ms = median_ms(fwd, args.reps, torch, grads)
                    fb_ms = median_ms(fwd_bwd, args.reps, torch, grads)
                except Exception as e:  # noqa: BLE001 - keep going; the row says what failed
                    print(f"fla\t{member}\t{shape}\tfailed: {type(e).__name__}: {str(e)[:200]}",
                          flush=True)
                    continue
                print(f"fla\t{member}\t{shape}\t{f_ms:.3f}\t{fb_ms:.3f}\t(first calls incl. "
                      f"autotuning {warm:.1f} s)", flush=True)
                out.write(f"fla\t{member}\t{shape}\t{f_ms:.3f}\t{fb_ms:.3f}\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
