"""Where a KernelBench candidate's `load_inline` build spends its time: torch's own compile
commands for a minimal CUDA extension whose CUDA source includes <torch/extension.h> (as
KernelBench's CUDA candidates commonly do), each run again alone and timed:

  main.cpp   the host compiler on load_inline's binding file (torch/extension.h + pybind11)
  pch        the same with torch/extension.h precompiled by the same flags (its build time and
             size printed too): what a shared precompiled header set would save
  cuda.cu    nvcc on the CUDA source, with `nvcc -time`'s phases: the host preprocessing, cudafe++
             (the host side's front end), the device preprocessing, cicc (the device side's front
             end and optimiser), ptxas, fatbinary, and the host compiler on cudafe++'s output

ninja runs main.cpp and cuda.cu side by side (MAX_JOBS), so a build's wall time is the longer of
the two plus the link; its CPU time is their sum. The commands are read from the build.ninja that
torch writes for the extension (its first, timed build), so they are the flags torch uses with
this toolchain. Needs nvcc (CUDA_HOME); no GPU (TORCH_CUDA_ARCH_LIST, default 9.0a, names the
target). Usage (from the repository):
  python bench/build_cache/compile_phases.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

CUDA_SOURCE = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_one_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

torch::Tensor add_one(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int n = static_cast<int>(x.numel());
  add_one_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
'''
CPP_SOURCE = "torch::Tensor add_one(torch::Tensor x);"


def ninja_variables(path: str) -> dict:
    """The top-level `name = value` lines of a build.ninja."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(\w+) = (.*)$", line.rstrip("\n"))
            if m:
                out[m.group(1)] = m.group(2)
    return out


def timed(cmd: list, cwd: str) -> float:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stderr[-3000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="build here and keep it (default: a temp dir)")
    args = ap.parse_args()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
    from torch.utils import cpp_extension  # noqa: PLC0415 (after the environment is set)

    if cpp_extension.CUDA_HOME is None or shutil.which(
            os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")) is None:
        sys.exit("no nvcc (CUDA_HOME): nothing to measure")
    root = args.keep or tempfile.mkdtemp(prefix="kcv-compile-phases-")
    os.makedirs(root, exist_ok=True)
    ext = os.path.join(root, "torch_extensions")
    os.environ["TORCH_EXTENSIONS_DIR"] = ext
    name = f"kcv_phases_{time.time_ns()}"  # a build no earlier run has made
    t0 = time.monotonic()
    cpp_extension.load_inline(name=name, cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                              functions=["add_one"], build_directory=None)
    first = time.monotonic() - t0
    build = os.path.join(ext, name)
    v = ninja_variables(os.path.join(build, "build.ninja"))
    cxx, nvcc = v["cxx"], v["nvcc"]
    cflags, post = shlex.split(v["cflags"]), shlex.split(v.get("post_cflags", ""))
    cuda_cflags = shlex.split(v["cuda_cflags"])
    cuda_post = shlex.split(v.get("cuda_post_cflags", ""))
    cores = os.cpu_count()
    print(f"host: {cores} CPUs; {shlex.split(cxx)[0]} and {nvcc}; "
          f"TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']}")
    print(f"first build through load_inline (ninja, both sources, link): {first:7.2f} s")

    main_s = timed([*shlex.split(cxx), *cflags, "-c", "main.cpp", "-o", "again.o", *post], build)
    print(f"main.cpp  {main_s:7.2f} s")

    # torch/extension.h precompiled with the same flags (TORCH_EXTENSION_NAME is the extension's
    # name, which the header does not read), found ahead of the real header by -I.
    pch_dir = os.path.join(root, "pch")
    os.makedirs(os.path.join(pch_dir, "torch"), exist_ok=True)
    header = os.path.join(cpp_extension.include_paths()[0], "torch", "extension.h")
    gch = os.path.join(pch_dir, "torch", "extension.h.gch")
    shared = [f for f in cflags if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    pch_s = timed([*shlex.split(cxx), *shared, "-x", "c++-header", header, "-o", gch, *post], build)
    with_pch = timed([*shlex.split(cxx), "-Winvalid-pch", "-Werror=invalid-pch", f"-I{pch_dir}",
                      *cflags, "-c", "main.cpp", "-o", "pch.o", *post], build)
    print(f"pch       {with_pch:7.2f} s   (building it: {pch_s:.2f} s, "
          f"{os.path.getsize(gch) / 2**20:.0f} MiB)")

    phases = os.path.join(root, "nvcc_time.csv")
    cuda_s = timed([nvcc, *cuda_cflags, "-c", "cuda.cu", "-o", "again.cuda.o", *cuda_post,
                    "-time", phases], build)
    print(f"cuda.cu   {cuda_s:7.2f} s   nvcc's phases:")
    with open(phases, encoding="utf-8") as f:
        for row in csv.reader(f):
            if len(row) < 8 or row[7].strip() != "ms":
                continue
            print(f"  {row[1].strip():26s} {float(row[6]) / 1000:7.2f} s")
    print(f"a build's wall time, both sources at once: {max(main_s, cuda_s):.2f} s + the link; "
          f"its CPU time: {main_s + cuda_s:.2f} s ({with_pch + cuda_s:.2f} s with the pch)")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
