#!/usr/bin/env python3
"""What a CUDA worker call's copies cost, per way of copying, beside a device-to-device anchor.

A candidate's call on CUDA (python/kcv/worker/candidate.py) maps the call's shared-memory file
(kcv.worker.shm, MAP_POPULATE), copies each input's span to the device, runs the model, copies
each input's span back over the file and each output into it. This script times those copies
for one input and one output of the given sizes, over fresh files as the audit makes them (kcv
fills the file, a worker maps it), each way of copying on its own files:

  pageable   the file's pages as mapped (what the worker does today)
  registered cudaHostRegister on the mapping before the copies, cudaHostUnregister after (its
             cost is in the figure)

and, as the anchor, the same bytes copied device to device. Run on a CUDA machine:

    python3 bench/audit/worker_copies.py --mb 64 256 --calls 8 [--procs 6]

--procs runs that many copies of the measurement at once (the audit's slots share the host).
The worker does not register its call files: registered copies are faster here, but in an audit
the registration cost more than the copies saved (docs/audit/host-bound-sample/65644e6.md).
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch  # noqa: E402

from kcv.worker.shm import CallFile  # noqa: E402


WAYS = ("pageable", "registered")


def _file(path: str, size: int) -> None:
    """A file filled the way kcv fills a call file (written once, so its pages exist)."""
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)


def _register(addr: int, size: int) -> None:
    rc = torch.cuda.cudart().cudaHostRegister(addr, size, 0)
    if int(rc) != 0:
        raise RuntimeError(f"cudaHostRegister: {rc}")


def _unregister(addr: int) -> None:
    torch.cuda.cudart().cudaHostUnregister(addr)


def one_call(path: str, in_bytes: int, out_bytes: int, way: str) -> dict:
    """Seconds of each step of one call's copies over `path`."""
    t = {}
    t0 = time.perf_counter()
    f = CallFile(path, in_bytes + out_bytes)
    t["map"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if way != "pageable":
        _register(f.addr, f.size)
    t["register"] = time.perf_counter() - t0
    base = torch.frombuffer(f.buffer(), dtype=torch.uint8)
    inp, out = base[:in_bytes], base[in_bytes:]
    t0 = time.perf_counter()
    dev = inp.to("cuda", copy=True)
    torch.cuda.synchronize()
    t["h2d_input"] = time.perf_counter() - t0
    result = torch.empty(out_bytes, dtype=torch.uint8, device="cuda")
    result.fill_(7)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    inp.copy_(dev)
    torch.cuda.synchronize()
    t["d2h_input_back"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out.copy_(result)
    torch.cuda.synchronize()
    t["d2h_output"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if way != "pageable":
        _unregister(f.addr)
    t["unregister"] = time.perf_counter() - t0
    del base, inp, out, dev, result
    f.close()
    return t


def measure(args, slot: int, queue) -> None:
    torch.cuda.init()
    rows = {}
    for mb in args.mb:
        size = mb << 20
        for way in WAYS:
            steps = []
            for c in range(args.calls):
                path = f"/dev/shm/kcv-bench-copies-{os.getpid()}-{c}"
                _file(path, 2 * size)
                try:
                    steps.append(one_call(path, size, size, way))
                finally:
                    os.unlink(path)
            rows[(mb, way)] = {k: statistics.median(s[k] for s in steps[1:] or steps)
                               for k in steps[0]}
        a = torch.empty(size, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        b.copy_(a)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            b.copy_(a)
        torch.cuda.synchronize()
        rows[(mb, "d2d")] = {"copy": (time.perf_counter() - t0) / 3}
    queue.put((slot, rows))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, nargs="+", default=[64, 256], help="input = output MiB")
    p.add_argument("--calls", type=int, default=8, help="calls per size and way (median of "
                   "all but the first)")
    p.add_argument("--procs", type=int, default=1, help="measurements run at once")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("worker_copies: no CUDA device", file=sys.stderr)
        return 2
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=measure, args=(args, k, queue)) for k in range(args.procs)]
    for pr in procs:
        pr.start()
    results = [queue.get() for _ in procs]
    for pr in procs:
        pr.join()
    rows = sorted(results)[0][1]  # slot 0's figures (the others ran beside it)
    print(f"worker call copies, input = output size, {args.procs} process(es) at once, "
          f"median of {max(args.calls - 1, 1)} call(s), ms (slot 0)")
    steps = ["map", "register", "h2d_input", "d2h_input_back", "d2h_output", "unregister"]
    print(f"{'MiB':>5} {'way':<11}" + "".join(f"{s:>15}" for s in steps) + f"{'copies':>10}"
          f"{'x d2d':>8}")
    for mb in args.mb:
        d2d = rows[(mb, "d2d")]["copy"] * 3  # the three copies of a call, device to device
        for way in WAYS:
            r = rows[(mb, way)]
            total = sum(r[s] for s in steps)
            print(f"{mb:>5} {way:<11}" + "".join(f"{r[s] * 1e3:>15.2f}" for s in steps) +
                  f"{total * 1e3:>10.2f}{total / d2d:>8.1f}")
        print(f"{mb:>5} {'d2d x3':<11}{d2d * 1e3:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
