"""The per-kernel cost of the candidate sandbox on the CPU: the time from nothing to a candidate
worker that has answered hello and loaded a small KernelBench pair, measured in one run for
  plain      `python -m kcv.worker` (an unsandboxed cold start),
  sandboxed  the same command inside the kernel's bwrap sandbox (kcv.sandbox.argv),
  kernel     a kernel's sandbox with its warm parent (kcv.sandbox.KernelSandbox): the server's
             start and imports plus the first worker forked from it, as the audit pays per kernel,
  fork       a second worker forked from that warm parent (a restart within the kernel),
printed with the ratio of each to plain. Usage (from the repository, after a build):
  PYTHONPATH=$PWD/build/release/python:$PWD/python:$PWD/python/tests \
      python bench/sandbox/start_cost.py [N]   (absolute paths: the sandbox starts in /tmp)
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import kb_problems as kb
from kcv import sandbox


def start(cmd: list[str], cache: str) -> float:
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    load = {"type": "load", "kind": "kernelbench", "role": "candidate", "reference_code": kb.ADD,
            "candidate_code": kb.ADD_CANDIDATE, "seed": 1, "device": "cpu", "cache_dir": cache}
    for req in ({"type": "hello", "protocol": 1}, load):
        p.stdin.write(json.dumps(req) + "\n")
        p.stdin.flush()
        reply = json.loads(p.stdout.readline())
        assert reply["type"] in ("hello", "loaded"), reply
    took = time.monotonic() - t0
    p.stdin.close()
    p.wait(30)
    return took


def main(n: int) -> None:
    if not sandbox.support()["available"]:
        sys.exit(f"no sandbox here: {sandbox.support()['reason']}")
    plain_cmd = [sys.executable, "-m", "kcv.worker"]
    times = {"plain": [], "sandboxed": [], "kernel": [], "fork": []}
    for _ in range(n):
        cache = tempfile.mkdtemp(prefix="kcv-bench-")
        times["plain"].append(start(plain_cmd, cache))
        with sandbox.KernelSandbox(cache, [], warm=False) as box:
            times["sandboxed"].append(start(box.command(), cache))
        t0 = time.monotonic()
        with sandbox.KernelSandbox(cache, [], warm=True) as box:
            start(box.command(), cache)
            times["kernel"].append(time.monotonic() - t0)
            times["fork"].append(start(box.command(), cache))
    base = sum(times["plain"]) / n
    for name, ts in times.items():
        mean = sum(ts) / n
        print(f"{name:10s} {mean:7.2f} s  ({mean / base:5.2f} x plain)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
