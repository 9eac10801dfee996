"""What one C++ judge call costs on a large output, as the audit makes it (kcv._core.judge with an
error_model oracle entry and one candidate call): the heavy KernelBench kernels spent up to
190 s of their audit in the judges (docs/audit/bench.txt). Prints, per gate, the best of a few
calls in seconds and in nanoseconds per element. A benchmark, not a test.

  PYTHONPATH=build/release/python:python python3 bench/audit/judge_cost.py [ELEMENTS] [REPEATS]
"""

import json
import sys
import time

import numpy as np

from kcv import _core
from kcv.audit import error_model

GATES = ("CMP-01", "CMP-02", "CMP-03", "EXC-01", "EXC-02", "ORD-02", "PRC-01", "RES-01")


def main(n: int, repeats: int) -> int:
    rng = np.random.default_rng(0)
    y = rng.standard_normal(n) * np.exp(rng.uniform(-5, 5, n))  # ten decades of magnitude
    eager = (y * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)
    cand = (y * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)
    t = time.perf_counter()
    entry = error_model.oracle_entry("f32", y, eager, None)
    print(f"{n} elements; oracle entry {time.perf_counter() - t:.2f} s")
    inputs = [("x", rng.standard_normal(1024).astype(np.float32))]
    call = _core.CallRecord(status="ok", outputs=[cand])
    contract = json.dumps({"deterministic": True, "profile": "strict"})
    for gate in GATES:
        calls = [call, call] if gate == "ORD-02" else [call]
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            res = _core.judge(gate, calls=calls, oracle=[entry], inputs=inputs,
                              contract_json=contract, repetitions=len(calls))
            best = min(best, time.perf_counter() - t)
        print(f"  {gate}: {best:6.3f} s  {1e9 * best / n:6.1f} ns/element  ({res['verdict']})")
    return 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    sys.exit(main(args[0] if args else 16_000_000, args[1] if len(args) > 1 else 3))
