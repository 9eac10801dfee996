"""What a candidate's torch extension build costs a worker's load on the CPU, and what the build
cache (kcv.buildcache, kcv.worker.buildcache) saves: the seconds from the load request to the
`loaded` reply of a fresh `python -m kcv.worker` (torch's import included) for
  none      a candidate that builds nothing (the floor),
  cold      a candidate whose module calls load_inline on one small C++ function (the
            torch/extension.h header set compiled and linked), in an empty cache_dir,
  cached    the same candidate again in a fresh worker, its entry in place (ninja: no work),
  restored  the same in a fresh worker after its entry was published to a shared cache and
            copied back into an empty cache_dir at the same path (what a sandboxed kernel of
            the same code gets, kcv.sandbox.KernelSandbox),
plus the publish and restore copies themselves and the entry's size. Usage (from the
repository):
  PYTHONPATH=$PWD/python:$PWD/python/tests python bench/build_cache/load_cost.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kb_problems as kb
from kcv import buildcache

BUILDS = '''
from torch.utils.cpp_extension import load_inline

_ext = load_inline(name="kcv_add_one", functions=["add_one"], extra_cflags=["-O2"],
                   cpp_sources="torch::Tensor add_one(torch::Tensor x) { return x + 1; }")
''' + kb.ADD_CANDIDATE


def load_seconds(code: str, cache: str) -> float:
    p = subprocess.Popen([sys.executable, "-m", "kcv.worker"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    load = {"type": "load", "kind": "kernelbench", "role": "candidate", "reference_code": kb.ADD,
            "candidate_code": code, "seed": 1, "device": "cpu", "cache_dir": cache}
    p.stdin.write(json.dumps({"type": "hello", "protocol": 1}) + "\n")
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["type"] == "hello"
    t0 = time.monotonic()
    p.stdin.write(json.dumps(load) + "\n")
    p.stdin.flush()
    reply = json.loads(p.stdout.readline())
    took = time.monotonic() - t0
    assert reply["type"] == "loaded", reply
    p.stdin.close()
    p.wait(30)
    return took


def size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def main() -> None:
    root = tempfile.mkdtemp(prefix="kcv-build-cost-")
    cache, shared = os.path.join(root, "cache"), os.path.join(root, "shared")
    code = BUILDS + f"# {time.time_ns()}\n"  # a text no earlier run has built
    print(f"none      {load_seconds(kb.ADD_CANDIDATE, os.path.join(root, 'plain')):7.2f} s")
    print(f"cold      {load_seconds(code, cache):7.2f} s")
    print(f"cached    {load_seconds(code, cache):7.2f} s")
    t0 = time.monotonic()
    assert buildcache.publish(cache, shared, code)
    t1 = time.monotonic()
    shutil.rmtree(cache)
    assert buildcache.restore(shared, code, cache)
    t2 = time.monotonic()
    print(f"restored  {load_seconds(code, cache):7.2f} s")
    print(f"publish   {t1 - t0:7.3f} s   restore {t2 - t1:.3f} s   entry "
          f"{size(os.path.join(cache, 'builds')) / 2**10:.0f} KiB")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
