#!/usr/bin/env python3
"""Whether a trusted run gives the same bits twice: a model's fp32 and fp64 runs on CUDA under
torch's cuDNN defaults and under the trusted runs' deterministic_cudnn (kcv.worker.reference),
each repeated, with how many repeats differ from the first and their time.

    python3 bench/audit/trusted_repeatability.py [--repeats 10]

The models are transposed and plain convolutions at KernelBench-like shapes (a transposed
convolution's forward is a convolution's data gradient, whose fastest cuDNN algorithms
accumulate with atomics). docs/decisions/0005-deterministic-trusted-runs.md.
"""

import argparse
import contextlib
import os
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("trusted_repeatability: no CUDA device", file=sys.stderr)
        return 2
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
