"""The battery's own cost on the CPU: one synthetic KernelBench problem (64 x 65536 elementwise,
16 MiB of input and output) audited end to end with real workers, timed per phase, with the wall
time of every gate's judging. Not a test: it prints figures (battery/replica is the issue 3
target, <= 2), for comparing changes to the battery, the judges or the executor, and the
orchestrator's peak memory against kcv.audit.memory's estimate.

  PYTHONPATH=build/core/python:python .venv/bin/python bench/audit/cpu_battery.py [--dim N]
      [--records FILE]

--records writes the kernel's verdict records as sorted JSON, for checking that a change to the
data path leaves every verdict and its evidence bit for bit as it was.
"""

import argparse
import collections
import json
import resource
import time

from kcv.audit import battery, memory
from kcv.audit.kernel import KernelConfig, audit_kernel

REFERENCE = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2.0
batch_size = 64
dim = {dim}
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=65536, help="columns of the 64-row input")
    p.add_argument("--records", help="write the verdict records here (JSON)")
    args = p.parse_args()
    ref = REFERENCE.format(dim=args.dim)
    row = dict(id="bench/cpu_battery", corpus="bench", level=1, problem_id=1,
               problem_name="tanh_times_two", language="torch", reference_code=ref,
               candidate_code=ref.replace("class Model(", "class ModelNew("))
    judged = collections.defaultdict(lambda: [0, 0.0])
    judge = battery.Battery.judge

    def timed(self, gate, *a, **k):
        t0 = time.perf_counter()
        try:
            return judge(self, gate, *a, **k)
        finally:
            judged[gate][0] += 1
            judged[gate][1] += time.perf_counter() - t0

    battery.Battery.judge = timed
    import torch  # noqa: F401 - imported before the baseline, as the orchestrator has it

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t: dict = {}
    out = audit_kernel(row, KernelConfig(profiles=["strict", "pytorch-eager"], device="cpu"), t)
    print(f"status {out['status']}, replica {out['replica_verdict']}")
    if args.records:
        with open(args.records, "w") as f:
            json.dump(sorted(out["verdicts"], key=lambda r: (r["gate"], r["profile"])), f,
                      indent=1, sort_keys=True)
    for k in ("load", "warmup", "replica", "battery", "total"):
        print(f"{k:>8}: {t.get(k, float('nan')):7.2f} s")
    print(f"battery / replica: {t['battery'] / t['replica']:.2f} (target <= 2)")
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss0
    io = 2 * 64 * args.dim * 4 / 2**20  # one f32 input and one f32 output
    print(f"orchestrator peak RSS grew {grew:.0f} MiB = {grew / io:.1f} x (inputs + outputs) "
          f"(kcv.audit.memory estimates {memory.estimate_host_bytes(io / 2, io / 2) / io:.1f} x)")
    costs = {k[5:]: v for k, v in t.items() if k.startswith("cost_")}
    print("where the time went (wall seconds per kind of work):",
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(costs.items(), key=lambda kv: -kv[1])))
    for gate, (n, s) in sorted(judged.items()):
        print(f"  {gate}: {n} judge calls (profiles included), {s:.2f} s")
    return 0 if out["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
