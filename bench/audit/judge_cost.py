"""What one C++ judge call costs on a large output (kcv._core.judge with an error_model oracle entry
and one candidate call): the heavy KernelBench kernels spent up to 190 s of their audit in the
judges (docs/audit/bench.txt). Prints, per gate, the best of a few calls in seconds and in
nanoseconds per element. A benchmark, not a test.

  PYTHONPATH=build/core/python:python python3 bench/audit/judge_cost.py [ELEMENTS] [REPEATS]
      [--audit [--uses-exp]]

By default each call converts the oracle entry itself and gets a 1024-element input, as the
judges were first measured. --audit makes the calls as the audit's battery does since session 12:
the oracle converted once (kcv._core.Oracle), and one float32 input of the output's size, as an
elementwise KernelBench problem has; --uses-exp marks the op as taking exp (battery.EXP_WORDS),
the one case in which PRC-01 reads the input values.
"""

import argparse
import json
import sys
import time

import numpy as np

from kcv import _core
from kcv.audit import error_model

GATES = ("CMP-01", "CMP-02", "CMP-03", "EXC-01", "EXC-02", "ORD-02", "PRC-01", "RES-01")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("elements", nargs="?", type=int, default=16_000_000)
    p.add_argument("repeats", nargs="?", type=int, default=3)
    p.add_argument("--audit", action="store_true",
                   help="a prepared oracle and an input of the output's size, as the battery")
    p.add_argument("--uses-exp", action="store_true", help="with --audit: the op takes exp")
    args = p.parse_args()
    n = args.elements
    rng = np.random.default_rng(0)
    y = rng.standard_normal(n) * np.exp(rng.uniform(-5, 5, n))  # ten decades of magnitude
    eager = (y * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)
    cand = (y * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)
    t = time.perf_counter()
    entry = error_model.oracle_entry("f32", y, eager, None)
    oracle = _core.Oracle([entry]) if args.audit else [entry]
    print(f"{n} elements; oracle entry {time.perf_counter() - t:.2f} s"
          + (f"; --audit{' --uses-exp' if args.uses_exp else ''}" if args.audit else ""))
    inputs = [("x", rng.standard_normal(n if args.audit else 1024).astype(np.float32))]
    call = _core.CallRecord(status="ok", outputs=[cand])
    contract = json.dumps({"deterministic": True, "profile": "strict"})
    for gate in GATES:
        calls = [call, call] if gate == "ORD-02" else [call]
        best = float("inf")
        for _ in range(args.repeats):
            t = time.perf_counter()
            res = _core.judge(gate, calls=calls, oracle=oracle, inputs=inputs,
                              contract_json=contract, repetitions=len(calls),
                              uses_exp=args.audit and args.uses_exp)
            best = min(best, time.perf_counter() - t)
        print(f"  {gate}: {best:6.3f} s  {1e9 * best / n:6.1f} ns/element  ({res['verdict']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
