"""Benchmark of kcv.glr's CUDA kernels against fla v0.5 in the same run: forward and
forward+backward times of GDN, KDA, GLA, SSD (simple GLA) and LA, bf16, medians of
triton.testing.do_bench, at one shape per call (--shape 1 = B1·T8192·H32·D128, --shape 2 =
B4·T4096·H16·D128, or BxTxHxD). Prints each row as soon as it is measured and rewrites the
markdown table (--out) after every row, so a run cut short keeps what it measured.
ratio = fla time / ours (> 1: kcv is faster).

fla's cost is its Triton autotuning (every config of every kernel compiled, then timed). Before
timing, --precompile-shards N worker processes per member compile all of fla's configs into
Triton's on-disk cache in parallel (glr_cases.compile_shard_autotune, nothing timed there); the
timing process then autotunes fla normally, with every config timed under a shorter budget
(--autotune-warmup/--autotune-rep ms instead of Triton's 25/100), and finds every kernel
compiled. Each implementation runs forward and forward+backward once (its autotuning) before
it is timed.

  PYTHONPATH=/tmp/site python3 bench/glr/bench.py --shape 1 --out bench_1.md
"""

import argparse
import os
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "glr",
                                "check"))
import glr_cases as gc  # noqa: E402

SHAPES = {"1": (1, 8192, 32, 128), "2": (4, 4096, 16, 128)}


def parse_shape(text):
    if text in SHAPES:
        return SHAPES[text]
    parts = text.lower().replace("b", "").replace("t", "").replace("h", "").replace("d", "")
    B, T, H, D = (int(v) for v in parts.split("x"))
    return B, T, H, D


def timers(ops, member, x):
    """(forward closure, forward+backward closure, tensors whose grads to reset)."""
    y = {n: (x[n].detach().clone().requires_grad_() if n in gc.leaves(x) else x[n]) for n in x}
    grads = [y[n] for n in gc.leaves(x)]

    def fwd():
        with torch.no_grad():
            gc.call(ops, member, y)

    def fwd_bwd():
        o, ht = gc.call(ops, member, y)
        torch.autograd.backward((o, ht), (y["do"], y["dht"]))

    return fwd, fwd_bwd, grads


def warm(fn, grads):
    """One call (autotuning happens here); returns its wall time in ms."""
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    for g in grads:
        g.grad = None
    return (time.perf_counter() - t0) * 1e3


def bench(do_bench, fn, grads, warmup, rep):
    """Median time in ms; at least ~10 timed repetitions however long one call is."""
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once = (time.perf_counter() - t0) * 1e3
    return do_bench(fn, warmup=warmup, rep=max(rep, 10 * once), grad_to_none=grads,
                    return_mode="median")


def measure(do_bench, impl, ops, member, x, args):
    fwd, fb, grads = timers(ops, member, x)
    try:
        t_warm = warm(fwd, grads) + warm(fb, grads)
        out = (bench(do_bench, fwd, grads, args.warmup, args.rep),
               bench(do_bench, fb, grads, args.warmup, args.rep))
        print(f"  {member} {impl}: first calls {t_warm / 1e3:.1f} s, fwd {out[0]:.3f} ms, "
              f"fwd+bwd {out[1]:.3f} ms", flush=True)
        return out
    except Exception as e:  # noqa: BLE001 - keep going; show the failure in the table
        print(f"  {member} {impl} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
        return float("nan"), float("nan")


# --------------------------------------------------------------------------- precompilation


def precompile_worker(args):
    """One member, one shard: run fla's forward and forward+backward once with this shard's
    configs (compiles them into Triton's cache). Nothing is timed."""
    shard, shards = (int(v) for v in args.shard.split("/"))
    gc.compile_shard_autotune(shard, shards)
    fla_ops, _ = gc.load_fla()
    B, T, H, D = parse_shape(args.shape)
    x = gc.make_inputs(args.precompile, B, T, H, D, seed=3)
    fwd, fb, grads = timers(fla_ops, args.precompile, x)
    t0 = time.time()
    try:
        warm(fwd, grads)
        warm(fb, grads)
        status = "ok"
    except Exception as e:  # noqa: BLE001
        status = f"{type(e).__name__}: {str(e)[:160]}"
    print(f"  precompile {args.precompile} shard {args.shard}: {time.time() - t0:.1f} s, {status}",
          flush=True)
    return 0


def precompile(args, members):
    """All members x shards at once; waits; returns the wall time."""
    t0 = time.time()
    procs = []
    for m in members:
        for s in range(args.precompile_shards):
            cmd = [sys.executable, "-u", os.path.abspath(__file__), "--precompile", m, "--shard",
                   f"{s}/{args.precompile_shards}", "--shape", args.shape]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 bufsize=1)
            th = threading.Thread(target=lambda p=p: [print(line, end="", flush=True)
                                                      for line in p.stdout], daemon=True)
            th.start()
            procs.append((p, th))
    for p, th in procs:
        p.wait()
        th.join()
    return time.time() - t0


# --------------------------------------------------------------------------- main


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1", help="1, 2, or BxTxHxD (e.g. 1x8192x32x128)")
    ap.add_argument("--out", default="bench.md")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench rep, ms (at least 10 calls)")
    ap.add_argument("--members", default=",".join(gc.MEMBERS))
    ap.add_argument("--precompile-shards", type=int, default=3,
                    help="processes per member compiling fla's configs first (0: none)")
    ap.add_argument("--autotune-warmup", type=int, default=5, help="ms per config")
    ap.add_argument("--autotune-rep", type=int, default=20, help="ms per config")
    ap.add_argument("--precompile", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.precompile:
        return precompile_worker(args)

    members = args.members.split(",")
    B, T, H, D = parse_shape(args.shape)
    shape = f"B{B} T{T} H{H} D{D}"
    t_start = time.time()
    pre = ""
    if args.precompile_shards > 0:
        wall = precompile(args, members)
        pre = (f"fla's configs precompiled by {args.precompile_shards} processes per member in "
               f"parallel ({wall:.0f} s, nothing timed there). ")
        print(f"precompile: {wall:.0f} s", flush=True)
    do_bench = gc.quick_autotune_bench(args.autotune_warmup, args.autotune_rep)
    fla_ops, note = gc.load_fla()
    ours = gc.kcv_ops()
    dev = torch.cuda.get_device_name()
    lines = [f"# kcv.glr vs fla at {shape}, bf16, {dev}", "",
             f"Command: `python3 bench/glr/bench.py {' '.join(sys.argv[1:])}`", "",
             f"Times in ms: medians of triton.testing.do_bench (warmup {args.warmup} ms, rep "
             f"max({args.rep} ms, 10 calls)), after one forward and one forward+backward call "
             "of each implementation (fla's autotuning). ratio = fla / ours (> 1: kcv faster). "
             "No speed target yet: kcv's kernels are the correct-first CUDA-core version.", "",
             note, "",
             pre + f"fla's autotuners timed every config with warmup {args.autotune_warmup} ms / "
             f"rep {args.autotune_rep} ms (Triton's default 25/100) and kept the fastest.", "",
             "| shape | member | fwd ours | fwd fla | fwd ratio | fwd+bwd ours | fwd+bwd fla | "
             "fwd+bwd ratio |", "|---|---|---|---|---|---|---|---|"]
    write(args.out, lines)
    for member in members:
        t0 = time.time()
        x = gc.make_inputs(member, B, T, H, D, seed=3)
        fo, fbo = measure(do_bench, "ours", ours, member, x, args)
        ff, fbf = measure(do_bench, "fla", fla_ops, member, x, args)
        line = (f"| {shape} | {member} | {fo:.3f} | {ff:.3f} | {ff / fo:.2f} | {fbo:.3f} | "
                f"{fbf:.3f} | {fbf / fbo:.2f} |")
        print(line + f"   [{time.time() - t0:.0f} s]", flush=True)
        lines.append(line)
        write(args.out, lines)
        del x
        torch.cuda.empty_cache()
    lines += ["", f"Total {time.time() - t_start:.0f} s."]
    write(args.out, lines)
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
