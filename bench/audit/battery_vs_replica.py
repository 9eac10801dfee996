"""The audit benchmark (issue 3 item 6): how long kcv's gates take per kernel against the
allclose replica measured in the same run, from the per-kernel timings `kcv audit --timings`
writes (one JSON object per line, seconds: size, memory_wait, load, replica, gates, total, and
reduced when judged at a reduced shape; timing files of the Python battery, before the one
pipeline, have battery, warmup and cost_* instead of gates, and are read too).
Compiles are excluded by construction: they happen in `load`.
Target: gates <= 2 x replica per kernel. Prints the ratio table and the share within target.

  python3 bench/audit/battery_vs_replica.py TIMINGS.jsonl [...]
"""

import json
import statistics
import sys


def rows(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def slot_time(every):
    """Every timed kernel, finished or not: where a slot's wall time went, waits included."""
    total = sum(r.get("total", 0.0) for r in every)
    wait = sum(r.get("memory_wait", 0.0) for r in every)
    statuses = {}
    for r in every:
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1
    print(f"kernels timed: {len(every)} ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}); "
          f"slot time {total:.0f} s, of it waiting for host memory {wait:.0f} s "
          f"({100 * wait / total if total else 0:.0f} %)")


def gates_time(r):
    """The gates' wall time of one kernel: `gates` (src/kernelbench), or `battery` in a timing
    file of the Python battery; None when the kernel got no further than the replica."""
    return r.get("gates", r.get("battery"))


def main(paths):
    every = list(rows(paths))
    if every:
        slot_time(every)
    measured = [r for r in every if r.get("replica") and gates_time(r) is not None]
    if not measured:
        print("no kernel with both a replica and a gates time")
        return 1
    ratios = sorted(gates_time(r) / r["replica"] for r in measured)
    within = sum(x <= 2.0 for x in ratios)
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]  # noqa: E731
    reduced = sum(1 for r in measured if r.get("reduced"))
    print(f"kernels with both times: {len(ratios)}"
          + (f" ({reduced} judged at a reduced shape, replica and gates alike)" if reduced
             else ""))
    print(f"gates / replica: median {statistics.median(ratios):.2f}, p10 {q(0.1):.2f}, "
          f"p90 {q(0.9):.2f}, max {ratios[-1]:.2f}")
    print(f"within the 2x target: {within}/{len(ratios)} ({100 * within / len(ratios):.0f} %)")
    for key in ("size", "load", "memory_wait", "warmup", "replica", "gates", "battery", "total"):
        vals = [r[key] for r in measured if r.get(key) is not None]
        if vals:
            print(f"{key:>11}: median {statistics.median(vals):7.2f} s, sum {sum(vals):8.1f} s")
    costs = sorted({k for r in measured for k in r if k.startswith("cost_")})
    if costs:
        print("where the time goes (wall seconds per kind of work; side-by-side calls each count):")
    for key in costs:
        vals = [r[key] for r in measured if r.get(key) is not None]
        print(f"  {key[5:]:>26}: median {statistics.median(vals):7.2f} s, sum {sum(vals):8.1f} s")
    by_lang = {}
    for r in measured:
        by_lang.setdefault(r.get("language", "?"), []).append(gates_time(r) / r["replica"])
    for lang, xs in sorted(by_lang.items()):
        print(f"  {lang:>7}: {len(xs)} kernels, median ratio {statistics.median(xs):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
