#!/usr/bin/env python3
"""What a worker's load at another shape costs, step by step: loads one corpus row's reference
(and candidate) in this process, as kcv.worker's load request does, at each shape given, and
prints each load's seconds and, with --profile, the functions that took the time.

The audit moves a kernel's second pair of workers from shape to shape by reloading them
(src/kernelbench/workers.cpp); `kcv audit --timings` counts those loads (shapes.<role>.n) and
their seconds (shapes.<role>.load). This script says where a load's seconds go, on the machine
it runs on, without kcv's orchestrator:

    PYTHONPATH=python python3 bench/audit/shape_loads.py corpora/cuda_l1.jsonl \\
        --id cudal1/a100/L1/P83 --shape width=251 --shape width=257 --shape batch_size=13 \\
        --role both --device cuda --profile 25

The loads run unsandboxed, in this process: use it on rows you trust to run (a corpus row you
have audited). --size-on-meta-over gives the reference load the meta sizing the audit gives
loads at other shapes (the audit's probe budget, 256 MiB, by default).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import tempfile
import time


def _row(path: str, kernel_id: str) -> dict:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("id") == kernel_id:
                return row
    raise SystemExit(f"{path}: no row with id {kernel_id!r}")


def _shape(text: str) -> dict:
    out = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise SystemExit(f"--shape {text!r}: {part!r} is not NAME=INTEGER") from None
    return out


def _request(row: dict, role: str, device: str, constants: dict, cache_dir: str,
             over: int, facts: bool) -> dict:
    req = {"kind": "kernelbench", "role": role, "reference_code": row["reference_code"],
           "seed": 0, "device": device, "name": row["id"], "op": "kernelbench",
           "constants": constants, "cache_dir": cache_dir, "facts": facts}
    if role == "candidate":
        req["candidate_code"] = row["candidate_code"]
    elif over > 0:
        req["size_on_meta_over"] = over
    return req


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", help="a corpus .jsonl (KernelBench rows)")
    ap.add_argument("--id", required=True, help="the row's id")
    ap.add_argument("--shape", action="append", default=[],
                    help="NAME=INT[,NAME=INT...]: constants of one load (repeatable, in order); "
                         "the row's own shape is loaded first either way")
    ap.add_argument("--role", choices=("reference", "candidate", "both"), default="reference")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--cache-dir", default=None, help="build cache (default: a fresh temp dir; "
                    "the first candidate load builds into it)")
    ap.add_argument("--size-on-meta-over", type=int, default=256 << 20)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N functions with the most cumulative time over the loads "
                         "at other shapes, per role")
    args = ap.parse_args(argv)

    from kcv.worker import problem  # noqa: PLC0415 (after argument errors)

    row = _row(args.corpus, args.id)
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="kcv-shape-loads-")
    roles = ("reference", "candidate") if args.role == "both" else (args.role,)
    shapes = [_shape(s) for s in args.shape]
    for role in roles:
        t0 = time.perf_counter()
        problem.load(_request(row, role, args.device, {}, cache_dir, 0, True))
        print(f"{role} at the row's shape: {time.perf_counter() - t0:.3f} s (facts traced)")
        prof = cProfile.Profile() if args.profile else None
        total = 0.0
        for constants in shapes:
            req = _request(row, role, args.device, constants, cache_dir,
                           args.size_on_meta_over, False)
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            try:
                loaded = problem.load(req)
                sized_only = getattr(loaded, "sized_only", False)
                note = " (sized on meta only)" if sized_only else ""
            except Exception as e:  # noqa: BLE001 (a shape the row refuses is a figure too)
                note = f" (failed: {str(e).splitlines()[0][:120]})"
            finally:
                if prof:
                    prof.disable()
            dt = time.perf_counter() - t0
            total += dt
            print(f"{role} at {constants}: {dt:.3f} s{note}")
        if shapes:
            print(f"{role}: {len(shapes)} load(s) at other shapes, {total:.3f} s, "
                  f"{total / len(shapes):.3f} s each")
        if prof:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.profile)
            print(out.getvalue())
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
