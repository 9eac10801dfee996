"""Benchmark of kcv.glr's CUDA kernels against fla v0.5 in the same process: forward and
forward+backward times of GDN, KDA, GLA, SSD (simple GLA) and LA at B1·T8192·H32·D128 and
B4·T4096·H16·D128, bf16, medians of triton.testing.do_bench. Prints the ratio table
(fla time / ours: > 1 means kcv is faster) and writes it as markdown to --out.

  PYTHONPATH=/tmp/site python3 bench/glr/bench.py --out bench.md
"""

import argparse
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "glr",
                                "check"))
import glr_cases as gc  # noqa: E402

SHAPES = [(1, 8192, 32, 128), (4, 4096, 16, 128)]


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


def bench(fn, grads, warmup, rep):
    try:
        fn()
        torch.cuda.synchronize()
        return triton.testing.do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grads,
                                       return_mode="median")
    except Exception as e:  # keep going; show the failure in the table
        print(f"  failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
        return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench.md")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench rep, ms")
    ap.add_argument("--members", default=",".join(gc.MEMBERS))
    args = ap.parse_args()
    fla_ops, note = gc.load_fla()
    ours = gc.kcv_ops()
    dev = torch.cuda.get_device_name()
    lines = [f"# kcv.glr vs fla: times in ms (median of triton.testing.do_bench, warmup "
             f"{args.warmup} ms, rep {args.rep} ms), bf16, {dev}", "", note, "",
             "ratio = fla / ours (> 1: kcv faster). No speed target yet: kcv's kernels are the "
             "correct-first CUDA-core version.", "",
             "| shape | member | fwd ours | fwd fla | fwd ratio | fwd+bwd ours | fwd+bwd fla | "
             "fwd+bwd ratio |", "|---|---|---|---|---|---|---|---|"]
    for B, T, H, D in SHAPES:
        shape = f"B{B} T{T} H{H} D{D}"
        for member in args.members.split(","):
            x = gc.make_inputs(member, B, T, H, D, seed=3)
            res = {}
            for impl, ops in (("ours", ours), ("fla", fla_ops)):
                fwd, fb, grads = timers(ops, member, x)
                res[impl] = (bench(fwd, grads, args.warmup, args.rep),
                             bench(fb, grads, args.warmup, args.rep))
                del fwd, fb, grads
            (fo, fbo), (ff, fbf) = res["ours"], res["fla"]
            line = (f"| {shape} | {member} | {fo:.3f} | {ff:.3f} | {ff / fo:.2f} | {fbo:.3f} | "
                    f"{fbf:.3f} | {fbf / fbo:.2f} |")
            print(line, flush=True)
            lines.append(line)
            del x
            torch.cuda.empty_cache()
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
