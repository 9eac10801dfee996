#!/usr/bin/env python3
"""The audit's four benchmark figures from real runs: two audits of the same ids, the first from
an empty build cache (cold), the second with the first's --cache-dir and a fresh store (warm).

    python3 bench/audit/figures.py --cold cold.db cold-timings.jsonl \\
        --warm warm.db warm-timings.jsonl [--kcv kcv] [--key-dir DIR]

On a GPU machine, `AUDIT_TWICE=1 bash scripts/device-audit` runs both audits and writes this
script's output to $OUT/figures.txt (docs/08_audit.md §6, "Benchmark figures"). Each figure is
printed as an absolute value and as its ratio to the target (below 1 meets it), with the number
of kernels it is over, the `--jobs` they ran at (a kernel's wall time grows with the kernels
beside it on the host) and what was left out:

1. Battery per kernel, excluding builds: the median of `replica` + `gates` (kcv audit
   --timings: verify_module's seconds after both workers loaded, so a load_inline build, which
   runs in the candidate's load, is not in it) over the kernels with status `ok` whose gates all
   ran. Left out: every other status (their battery stopped early or never ran) and the `ok`
   kernels with a probe "not run" because --kernel-timeout ended it (a verdict `error` whose
   reason says so). Target 2 s; given for the cold and the warm run (a Triton kernel compiles at
   its first launch, inside the replica, and finds its compiled form in the cache when warm).
2. Median `load_inline` build: `build` (the seconds the candidate's load spent inside
   torch.utils.cpp_extension.load / load_inline) over the kernels whose load compiled
   (`build_compiled` 1; in timings written before that field, `build_cached` 0) in the cold run.
   Left out: loads that found their build in the cache, loads whose calls compiled nothing (a
   build tree left by an earlier load held the library), and kernels whose build failed
   (compile_error: their load has no timings of its build).
   Target 15 s on 16 cores. The warm run's count of loads that built is printed too (0 when the
   cache served every build).
3. End to end: the wall time the store's runs cover (the union of each `kcv audit` run's span,
   from its start to its finish, or to its last recorded kernel when it was stopped; resumed
   invocations add up, time between them does not count), with how many kernels are final.
   Targets 60 min cold, 20 min warm; a store with kernels not final is marked incomplete.
4. Verdicts identical across the two runs: `kcv diff cold.db warm.db` (the kernels final in
   both, and a table of every status, replica verdict or gate verdict that differs, expected
   empty). Its exit status is this script's: 0 identical, 1 some differ, 2 a store unreadable.

The stores are read with sqlite3, read-only (never written); `kcv diff` verifies both first.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

BATTERY_TARGET_S = 2.0
BUILD_TARGET_S = 15.0
COLD_TARGET_S = 60 * 60.0
WARM_TARGET_S = 20 * 60.0
NOT_RUN = "not run:"  # the reason of a probe --kernel-timeout left unrun (docs/08 §6)


@dataclass
class Run:
    """One audit: its store and its --timings lines."""
    label: str
    store: str
    timings: list[dict]


@dataclass
class Median:
    """A median over kernels, with what was left out of it (reason -> count)."""
    seconds: float | None
    over: int
    excluded: Counter = field(default_factory=Counter)
    jobs: set = field(default_factory=set)  # the --jobs of the kernels it is over


def _jobs(lines: list[dict]) -> set:
    """The slot counts (kcv audit --jobs) the timing lines were measured at: a kernel's wall
    time grows with the kernels that share the host beside it, so a figure names them."""
    return {t["jobs"] for t in lines if isinstance(t.get("jobs"), int)}


def read_timings(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _connect(store: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{store}?mode=ro", uri=True)


def _cut_kernels(store: str) -> set[str]:
    """Kernels with a probe that --kernel-timeout left unrun."""
    with _connect(store) as db:
        rows = db.execute("SELECT DISTINCT kernel_id FROM verdicts WHERE verdict='error' "
                          "AND substr(reason, 1, ?)=?", (len(NOT_RUN), NOT_RUN)).fetchall()
    return {r[0] for r in rows}


def _last_by_kernel(timings: list[dict]) -> dict[str, dict]:
    """The last line of each kernel (a resumed kernel's final run)."""
    return {t["kernel_id"]: t for t in timings}


def battery(run: Run) -> Median:
    cut = _cut_kernels(run.store)
    out = Median(None, 0)
    values = []
    for kid, t in _last_by_kernel(run.timings).items():
        if t.get("status") != "ok" or "gates" not in t:
            out.excluded[f"status {t.get('status')}"] += 1
        elif kid in cut:
            out.excluded["ok, cut by --kernel-timeout"] += 1
        else:
            values.append(t.get("replica", 0.0) + t["gates"])
            out.jobs |= _jobs([t])
    out.seconds = statistics.median(values) if values else None
    out.over = len(values)
    return out


STEPS = (("replica", "KernelBench's check (the replica)"),
         ("gates.inputs", "probe inputs made (oracle.make_inputs)"),
         ("gates.candidate", "the candidate's calls (runner.run)"),
         ("gates.oracle", "the trusted result (oracle.evaluate, refine)"),
         ("gates.judge", "the judges"))


def _battery_kernels(run: Run) -> list[dict]:
    """The timing lines of figure 1's kernels: status ok, every probe run."""
    cut = _cut_kernels(run.store)
    return [t for kid, t in _last_by_kernel(run.timings).items()
            if t.get("status") == "ok" and "gates" in t and kid not in cut]


INPUT_PARTS = (("inputs.problem", "of the inputs: the reference at the shape"),
               ("inputs.draw", "of the inputs: the draws of get_inputs()"),
               ("inputs.transform", "of the inputs: kcv's transforms"))


def breakdown(run: Run) -> list[str]:
    """Where figure 1's time goes: each step's median and its share of the summed battery
    (kcv audit --timings: gates.* split the gates' seconds by step, gate.* by gate; a line
    written before they existed has neither)."""
    kernels = [t for t in _battery_kernels(run) if "gates.candidate" in t]
    if not kernels:
        return [f"   where the battery's time goes ({run.label}): no kernel with the split"]
    total = sum(t.get("replica", 0.0) + t["gates"] for t in kernels)
    lines = [f"   where the battery's time goes ({run.label}; {len(kernels)} kernel(s), "
             f"{total:.1f} s summed):",
             f"   {'step':<48} {'median':>8} {'share':>6}"]

    def row(name: str, values: list[float]) -> str:
        return (f"   {name:<48} {statistics.median(values):>7.2f}s "
                f"{100 * sum(values) / total if total else 0:>5.1f}%")

    for key, name in STEPS:
        lines.append(row(name, [t.get(key, 0.0) for t in kernels]))
    split = [t for t in kernels if "inputs.transform" in t]
    if split:  # timings written before the inputs' split have none
        for key, name in INPUT_PARTS:
            lines.append(row(name, [t.get(key, 0.0) for t in split]))
    lines.append(row("of the gates' steps: shrinking", [t.get("gates.shrink", 0.0) for t in kernels]))
    beside = [t for t in kernels if "gates.oracle_beside" in t]
    if beside:  # not a step: the trusted result's seconds the candidate's calls hid
        lines.append(row("not in the steps: trusted result beside the calls",
                         [t["gates.oracle_beside"] for t in beside]))
    lines.append(row("other (planning, bookkeeping)",
                     [t["gates"] - sum(t.get(k, 0.0) for k, _ in STEPS[1:]) for t in kernels]))
    gates = sorted({k for t in kernels for k in t if k.startswith("gate.")})
    by_gate = sorted(((sum(t.get(g, 0.0) for t in kernels), g) for g in gates), reverse=True)
    lines.append("   by gate (summed, largest first): " + ", ".join(
        f"{g[5:]} {100 * v / total:.0f}%" for v, g in by_gate if total))
    judges = sorted({k for t in kernels for k in t if k.startswith("judge.")})
    if judges:
        by_judge = sorted(((sum(t.get(j, 0.0) for t in kernels), j) for j in judges),
                          reverse=True)
        lines.append("   the judges by gate (summed, largest first): " + ", ".join(
            f"{j[6:]} {100 * v / total:.1f}%" for v, j in by_judge if total))
    return lines


def builds(run: Run) -> Median:
    out = Median(None, 0)
    values = []
    for t in _last_by_kernel(run.timings).values():
        if "build" in t and t.get("build_cached") == 0 and t.get("build_compiled", 1) == 1:
            values.append(t["build"])
            out.jobs |= _jobs([t])
        elif "build" in t and t.get("build_cached") == 0:
            out.excluded["load compiled nothing (its library was in place)"] += 1
        elif "build" in t:
            out.excluded["build found in the cache"] += 1
        elif t.get("status") == "compile_error":
            out.excluded["compile_error"] += 1
    out.seconds = statistics.median(values) if values else None
    out.over = len(values)
    return out


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class Wall:
    seconds: float
    runs: int
    stopped_runs: int  # runs without a finish time, counted to their last recorded kernel
    final: int
    kernels: int


def wall(store: str) -> Wall:
    with _connect(store) as db:
        runs = db.execute(
            "SELECT r.started_at, r.finished_at, (SELECT max(k.finished_at) FROM kernels k "
            "WHERE k.run_id=r.run_id) FROM runs r ORDER BY r.started_at").fetchall()
        final, kernels = db.execute(
            "SELECT sum(status NOT IN ('pending','running')), count(*) FROM kernels").fetchone()
    spans, stopped = [], 0
    for started, finished, last_kernel in runs:
        if finished is None:
            stopped += 1
        end = finished or last_kernel or started
        spans.append((_when(started), _when(end)))
    total, reach = 0.0, None
    for a, b in sorted(spans):  # the union of the spans (--procs runs overlap)
        if reach is None or a > reach:
            total += b - a
            reach = b
        elif b > reach:
            total += b - reach
            reach = b
    return Wall(total, len(runs), stopped, final or 0, kernels or 0)


def _excluded(m: Median) -> str:
    return ", ".join(f"{why} {n}" for why, n in sorted(m.excluded.items())) or "none"


def _row(name: str, value: str, target: str, ratio: float | str | None, over: str) -> str:
    r = ratio if isinstance(ratio, str) else "-" if ratio is None else f"{ratio:.2f}"
    return f"{name:<44} {value:>10} {target:>9} {r:>6}  {over}"


def _median_row(name: str, m: Median, target: float) -> list[str]:
    if m.seconds is None:
        return [_row(name, "-", f"<= {target:g} s", None, f"no kernel (left out: {_excluded(m)})")]
    at = f" at --jobs {', '.join(map(str, sorted(m.jobs)))}" if m.jobs else ""
    return [_row(name, f"{m.seconds:.2f} s", f"<= {target:g} s", m.seconds / target,
                 f"median of {m.over} kernel(s){at}; left out: {_excluded(m)}")]


def _wall_row(name: str, w: Wall, target: float) -> str:
    note = f"{w.final} of {w.kernels} kernel(s) final, {w.runs} run(s)"
    if w.stopped_runs:
        note += f", {w.stopped_runs} stopped (counted to their last kernel)"
    if w.final < w.kernels:
        note += "; INCOMPLETE: not an end-to-end figure"
    return _row(name, f"{w.seconds / 60:.1f} min", f"<= {target / 60:g} min", w.seconds / target,
                note)


CALL_PARTS = (("prepare", "kcv: buffers and call file made"),
              ("transport", "round trip less the worker's task"),
              ("task_copies", "worker: task less the model's run"),
              ("forward", "worker: the model's run"),
              ("finish", "kcv: inputs compared, outputs back"))


def _call_parts(t: dict, role: str) -> dict[str, float]:
    at = f"calls.{role}."
    task, forward = t.get(at + "task", 0.0), t.get(at + "forward", 0.0)
    return {"prepare": t.get(at + "prepare", 0.0),
            "transport": t.get(at + "round_trip", 0.0) - task,
            "task_copies": task - forward, "forward": forward,
            "finish": t.get(at + "finish", 0.0)}


def call_costs(run: Run) -> list[str]:
    """Where the worker calls of figure 1's kernels spent their time, per role (kcv audit
    --timings' calls.<role>.*: kcv's side before and after a call, the round trip, the worker's
    own task seconds and of them the model's run: the reference's forward alone, the candidate's
    forwards and the synchronize after them)."""
    kernels = [t for t in _battery_kernels(run) if "calls.reference.n" in t]
    if not kernels:
        return [f"   the worker calls' split ({run.label}): no kernel with calls.* timings"]
    total = sum(t.get("replica", 0.0) + t["gates"] for t in kernels)
    lines = [f"   the worker calls' split ({run.label}; {len(kernels)} kernel(s); share of the "
             f"{total:.1f} s summed battery):"]
    for role in ("reference", "candidate"):
        calls = [t.get(f"calls.{role}.n", 0.0) for t in kernels]
        parts = [_call_parts(t, role) for t in kernels]
        lines.append(f"   {role}: median {statistics.median(calls):.0f} calls per kernel; " +
                     ", ".join(f"{name} {100 * sum(p[key] for p in parts) / total:.1f}%"
                               for key, name in CALL_PARTS))
    for role in ("reference", "candidate"):
        with_loads = [t for t in kernels if f"shapes.{role}.n" in t]
        if with_loads:
            n = [t[f"shapes.{role}.n"] for t in with_loads]
            s = [t.get(f"shapes.{role}.load", 0.0) for t in with_loads]
            lines.append(f"   {role} loads at other shapes: median {statistics.median(n):.0f} "
                         f"per kernel, {statistics.median(s):.2f} s; {100 * sum(s) / total:.1f}% "
                         f"of the battery ({len(with_loads)} kernel(s))")
    return lines


def figures(cold: Run, warm: Run | None) -> list[str]:
    lines = [_row("figure", "value", "target", "ratio", "over"), "-" * 100]
    for run in (cold, warm):
        if run is not None:
            lines += _median_row(f"1. battery per kernel, no builds ({run.label})", battery(run),
                                 BATTERY_TARGET_S)
            lines += breakdown(run)
            lines += call_costs(run)
    lines += _median_row("2. load_inline build (cold)", builds(cold), BUILD_TARGET_S)
    if warm is not None:
        rebuilt = builds(warm).over
        lines.append(f"{'':<44} warm run: {rebuilt} load(s) built (0: the cache served all)")
    lines.append(_wall_row("3. end to end (cold build cache)", wall(cold.store), COLD_TARGET_S))
    if warm is not None:
        lines.append(_wall_row("3. end to end (warm build cache)", wall(warm.store),
                               WARM_TARGET_S))
    return lines


def verdict_diff(kcv: str, a: str, b: str, key_dir: str | None) -> tuple[int, str]:
    cmd = [kcv, "diff", a, b] + (["--key-dir", key_dir] if key_dir else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", nargs=2, metavar=("STORE", "TIMINGS"), required=True,
                   help="the audit from an empty --cache-dir: its store and --timings file")
    p.add_argument("--warm", nargs=2, metavar=("STORE", "TIMINGS"),
                   help="the same ids again with the same --cache-dir and a fresh store")
    p.add_argument("--kcv", default="kcv", help="the kcv program (for `kcv diff`)")
    p.add_argument("--key-dir", help="the stores' key directory (default: kcv's)")
    args = p.parse_args(argv)
    cold = Run("cold", args.cold[0], read_timings(args.cold[1]))
    warm = Run("warm", args.warm[0], read_timings(args.warm[1])) if args.warm else None
    print("\n".join(figures(cold, warm)))
    if warm is None:
        print("4. verdicts identical across two runs: not measured (no --warm run)")
        return 0
    rc, text = verdict_diff(args.kcv, cold.store, warm.store, args.key_dir)
    verdict = {0: "identical", 1: "DIFFERENT"}.get(rc, f"not compared (kcv diff exit {rc})")
    print(f"4. verdicts of the two runs: {verdict} (kcv diff {cold.store} {warm.store}):")
    print(text.rstrip())
    return rc


if __name__ == "__main__":
    sys.exit(main())
