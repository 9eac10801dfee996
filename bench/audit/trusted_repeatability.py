#!/usr/bin/env python3
"""Whether a trusted run gives the same bits twice: a model's fp32 and fp64 runs on CUDA under
torch's cuDNN defaults and under the trusted runs' deterministic_cudnn (kcv.worker.reference),
each repeated, with how many repeats differ from the first and their time; then the same runs
in fresh processes (as an audit's reference workers are), with how many processes' bits differ
from the first process's, started one after another and all at once.

    python3 bench/audit/trusted_repeatability.py [--repeats 10] [--processes 6]

The models are transposed and plain convolutions at KernelBench-like shapes (a transposed
convolution's forward is a convolution's data gradient, whose fastest cuDNN algorithms
accumulate with atomics). docs/decisions/0005-deterministic-trusted-runs.md.
"""

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch  # noqa: E402

from kcv.worker.reference import deterministic_cudnn  # noqa: E402

MODELS = {
    "ConvTranspose3d(3, 16, 3, stride 2, padding 1) on 16x3x16x32x32":
        (lambda: torch.nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1), (16, 3, 16, 32, 32)),
    "ConvTranspose2d(64, 128, 4, stride 2, padding 1) on 8x64x64x64":
        (lambda: torch.nn.ConvTranspose2d(64, 128, 4, stride=2, padding=1), (8, 64, 64, 64)),
    "Conv2d(64, 128, 3, padding 1) on 16x64x128x128":
        (lambda: torch.nn.Conv2d(64, 128, 3, padding=1), (16, 64, 128, 128)),
}


class ConvSwishNorm(torch.nn.Module):
    """A KernelBench level-2 model (ConvTranspose3d, Swish, GroupNorm, HardSwish)."""

    def __init__(self, c_in: int):
        super().__init__()
        self.conv = torch.nn.ConvTranspose3d(c_in, 16, 3, stride=2, padding=1)
        self.norm = torch.nn.GroupNorm(4, 16, eps=1e-5)

    def forward(self, x):
        x = self.conv(x)
        x = torch.sigmoid(x) * x
        return torch.nn.functional.hardswish(self.norm(x))


# The models of the cross-process check: the ones above and the level-2 model at two shapes.
PROCESS_MODELS = {
    **MODELS,
    "ConvTranspose3d+Swish+GroupNorm+HardSwish on 1x1x16x32x32":
        (lambda: ConvSwishNorm(1), (1, 1, 16, 32, 32)),
    "ConvTranspose3d+Swish+GroupNorm+HardSwish on 8x3x16x32x32":
        (lambda: ConvSwishNorm(3), (8, 3, 16, 32, 32)),
}


def runs(model, x, repeats: int, scope) -> tuple[int, float, float]:
    """(repeats whose bits differ from the first, the largest difference, median seconds)."""
    outs, secs = [], []
    with torch.no_grad(), scope():
        for _ in range(repeats):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            outs.append(model(x))
            torch.cuda.synchronize()
            secs.append(time.perf_counter() - t0)
    first = outs[0]
    differ = sum(not torch.equal(o, first) for o in outs[1:])
    largest = max(float((o - first).abs().max()) for o in outs)
    return differ, largest, sorted(secs)[len(secs) // 2]


def digests() -> dict:
    """In a fresh process: each model's output digest per dtype and cuDNN setting (weights and
    inputs from fixed seeds, so every process runs the same model on the same inputs)."""
    out = {}
    for name, (make, shape) in PROCESS_MODELS.items():
        for dtype in (torch.float32, torch.float64):
            torch.manual_seed(0)
            model = make().to("cuda", dtype)
            x = torch.randn(shape, device="cuda", dtype=dtype)
            for label, scope in (("defaults", contextlib.nullcontext),
                                 ("deterministic", deterministic_cudnn)):
                with torch.no_grad(), scope():
                    y = model(x)
                torch.cuda.synchronize()
                digest = hashlib.sha256(y.cpu().numpy().tobytes()).hexdigest()[:16]
                out[f"{name}|{str(dtype)[6:]}|{label}"] = digest
    return out


def across_processes(n: int, at_once: bool) -> None:
    cmd = [sys.executable, os.path.abspath(__file__), "--child"]
    if at_once:
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(n)]
        outs = [p.communicate()[0] for p in procs]
    else:
        outs = [subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False).stdout
                for _ in range(n)]
    runs_ = [json.loads(o) for o in outs if o.strip()]
    how = "all at once" if at_once else "one after another"
    print(f"\n{len(runs_)} fresh processes, {how}: processes whose bits differ from the first's")
    print(f"{'model':<66} {'dtype':<8} {'cuDNN':<14} {'differ':>7}")
    for key in runs_[0]:
        name, dtype, label = key.split("|")
        differ = sum(r.get(key) != runs_[0][key] for r in runs_[1:])
        print(f"{name:<66} {dtype:<8} {label:<14} {differ:>3}/{len(runs_) - 1:<3}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--processes", type=int, default=6,
                   help="fresh processes of the cross-process check (0: skip it)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("trusted_repeatability: no CUDA device", file=sys.stderr)
        return 2
    if args.child:
        print(json.dumps(digests()))
        return 0
    torch.manual_seed(0)
    print(f"{'model':<66} {'dtype':<8} {'cuDNN':<14} {'differ':>7} {'largest':>10} {'ms':>8}")
    for name, (make, shape) in MODELS.items():
        for dtype in (torch.float32, torch.float64):
            model = make().to("cuda", dtype)
            x = torch.randn(shape, device="cuda", dtype=dtype)
            for label, scope in (("defaults", contextlib.nullcontext),
                                 ("deterministic", deterministic_cudnn)):
                differ, largest, s = runs(model, x, args.repeats, scope)
                print(f"{name:<66} {str(dtype)[6:]:<8} {label:<14} "
                      f"{differ:>3}/{args.repeats - 1:<3} {largest:>10.3g} {s * 1e3:>8.2f}")
    if args.processes > 1:
        across_processes(args.processes, at_once=False)
        across_processes(args.processes, at_once=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
