"""What a detached audit's machine watch saw (scripts/device-audit-span writes it every 30 s):
the 1-minute load, the host memory used, how many GPU readings were 0 % busy, and, from the
`cpu:` lines of scripts/cpu-by-kind, each kind of process's share of the sampled CPU time, and
from its `host:` lines (watches written by the current scripts/device-audit-span) the host's median user, system
and idle percentages.

    python3 bench/audit/watch_summary.py WATCH_LOG
"""

import re
import statistics
import sys

LOAD = re.compile(r"^(\d+\.\d+) \d+\.\d+ \d+\.\d+ \d+/\d+ \d+$")
GPU = re.compile(r"^\d+, \d+ MiB, (\d+) %$")
CPU = re.compile(r"^cpu: (.*)$")
HOST = re.compile(r"^host: user (\S+) system (\S+) idle (\S+)$")


def summarise(lines):
    loads, used, gpu_busy, cpu, host = [], [], [], {}, []
    for line in lines:
        line = line.rstrip("\n")
        if m := LOAD.match(line):
            loads.append(float(m.group(1)))
        elif line.startswith("Mem:"):
            used.append(int(line.split()[2]))
        elif m := GPU.match(line):
            gpu_busy.append(int(m.group(1)))
        elif m := CPU.match(line):
            words = m.group(1).split()
            for kind, pct in zip(words[::2], words[1::2]):
                cpu.setdefault(kind, []).append(int(pct))
        elif m := HOST.match(line):
            host.append(tuple(float(g) for g in m.groups()))
    return loads, used, gpu_busy, cpu, host


def main(path):
    with open(path) as f:
        loads, used, gpu_busy, cpu, host = summarise(f)
    if not loads:
        sys.exit(f"watch_summary: no load readings in {path}")
    print(f"load (1 min): {len(loads)} readings, median {statistics.median(loads):.1f}, "
          f"max {max(loads):.1f}")
    if used:
        print(f"host memory used: median {statistics.median(used)} GB, max {max(used)} GB")
    if gpu_busy:
        idle = sum(1 for b in gpu_busy if b == 0)
        print(f"GPU readings: {len(gpu_busy)}, of them 0 % busy: {idle}")
    total = sum(sum(v) for v in cpu.values())
    if total:
        n = len(next(iter(cpu.values())))
        shares = ", ".join(f"{k} {sum(v) / total:.0%} (median {statistics.median(v) / 100:.1f} cores)"
                           for k, v in cpu.items())
        print(f"cpu by kind over {n} samples: {shares}")
    if host:
        user, system, idle = (statistics.median(col) for col in zip(*host))
        print(f"host cpu over {len(host)} samples: median user {user:.1f} %, system {system:.1f} %, "
              f"idle {idle:.1f} %")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: watch_summary.py WATCH_LOG")
    main(sys.argv[1])
