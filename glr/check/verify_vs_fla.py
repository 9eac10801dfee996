"""Accuracy of kcv.glr's CUDA kernels and of fla v0.5 side by side against the fp64 chunked
reference (kcv.glr on CPU float64 copies of the same bf16 inputs), with fla's metric (relative RMS)
and fla's limits, for GDN, KDA, GLA, SSD (simple GLA) and LA, forward and backward, on a
fixed-length and a varlen case. Writes a markdown table to --out and prints it.

  PYTHONPATH=/tmp/site python3 glr/check/verify_vs_fla.py --out verify_vs_fla.md
"""

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import glr_cases as gc  # noqa: E402


def reference(member, x, cu_seqlens):
    """fp64 chunked reference on the CPU (the C++ reference releases the GIL)."""
    ops = gc.kcv_ops()
    cpu = {n: (None if t is None else t.detach().double().cpu()) for n, t in x.items()}
    cu = None if cu_seqlens is None else cu_seqlens.cpu()
    return gc.fwd_bwd(ops, member, cpu, cu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="verify_vs_fla.md")
    ap.add_argument("--T", type=int, default=2048)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--members", default=",".join(gc.MEMBERS))
    args = ap.parse_args()
    fla_ops, note = gc.load_fla()
    ours = gc.kcv_ops()
    members = args.members.split(",")
    # Skewed lengths at any T (the offsets of T = 2048 scaled down, kept strictly increasing).
    varlen = sorted({0, *(max(1, min(args.T - 1, c * args.T // 2048)) for c in (100, 1100, 1163)), args.T})
    cases = [("fixed", 1, None), ("varlen", 1, varlen)]
    jobs, rows = [], []
    pool = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4))
    t0 = time.time()
    for case, B, cu in cases:
        for member in members:
            cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int64, device="cuda")
            x = gc.make_inputs(member, B, args.T, args.H, args.D, seed=7, cu_seqlens=cu)
            mine = gc.fwd_bwd(ours, member, x, cu_t)
            try:
                theirs = gc.fwd_bwd(fla_ops, member, x, cu_t)
                fla_err = None
            except Exception as e:  # report fla's failure, keep going
                theirs, fla_err = None, f"{type(e).__name__}: {str(e)[:120]}"
            torch.cuda.synchronize()
            jobs.append((case, member, mine, theirs, fla_err, pool.submit(reference, member, x, cu_t)))
    shape = f"B1 T{args.T} H{args.H} D{args.D}"
    lines = [f"# kcv.glr vs fla against the fp64 reference ({shape}; varlen cu_seqlens {varlen})",
             "", note, "",
             "fla's metric: RMS(ref - x) / RMS(ref) (0 when max |ref - x| <= 1e-6). PASS = "
             "ours within fla's limit.", "",
             "| case | member | tensor | ours | fla | limit | ours ok |",
             "|---|---|---|---|---|---|---|"]
    failures = 0
    for case, member, mine, theirs, fla_err, fut in jobs:
        ref = fut.result()
        for name in ("o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"):
            if name not in ref:
                continue
            e_ours = gc.err_ratio(ref[name], mine[name])
            e_fla = (f"{gc.err_ratio(ref[name], theirs[name]):.2e}" if theirs is not None
                     else "error")
            ok = e_ours <= gc.LIMITS[name]
            failures += not ok
            lines.append(f"| {case} | {member} | {name} | {e_ours:.2e} | {e_fla} | "
                         f"{gc.LIMITS[name]} | {'PASS' if ok else 'FAIL'} |")
            rows.append((case, member, name, e_ours, ok))
        if fla_err:
            lines.append(f"| {case} | {member} | (fla) | | {fla_err} | | |")
    lines += ["", f"{failures} tensor(s) of ours over fla's limit; "
              f"{time.time() - t0:.0f} s."]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
