"""The workers' side of the build cache (load_inline / load, Triton): an entry per role, code
text and toolchain under a load's cache_dir (its layout, and the hand-over of sandboxed
candidates' entries, are kcv.buildcache's; docs/08_audit.md §6 "Builds"). A sandboxed
candidate sees its kernel's scratch at cache_dir.

    builds/<key>/torch_extensions/   TORCH_EXTENSIONS_DIR of every load of that key
    builds/<key>/triton/             TRITON_CACHE_DIR of those loads
    builds/<key>/kcv-build.json      written once a load of the key succeeded: the entry

The key is the SHA-256 of the role, the code text the role builds (the extension names, the
sources and the flags it passes to load_inline are in that text) and the toolchain: torch's
version file (version, CUDA, git revision), the Python ABI, the machine, the device, the CUDA
architectures the build targets (TORCH_CUDA_ARCH_LIST, else the capabilities of the visible
devices, which is what torch builds for then; off CUDA the GPUs torch can see), the compilers
it calls (path, size, mtime) and the environment variables torch.utils.cpp_extension and nvcc
read for flags. Anything that changes the artefact changes the key; a --cache-dir kept across
runs, torch upgrades or hosts of other GPUs never hands one of them another's build.

Concurrent builds of one key share its directory: torch's JIT build takes an OS advisory lock
(torch.utils._filelock, released by the kernel when the holder dies) in each extension's build
directory and runs ninja under it, so the second worker finds ninja with nothing to do and
imports the same .so; Triton writes its cache entries by rename. A load that fails writes no
kcv-build.json: its directory is a build tree the next build resumes, never a published entry.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile

from kcv.buildcache import MARKER, entry_dir, is_built  # noqa: F401 (the layout, shared)

FORMAT = "kcv-build-1"
#: Environment read by torch.utils.cpp_extension or nvcc that changes what a build makes.
ENV_KEYS = ("CXX", "CC", "CUDA_HOME", "CUDA_PATH", "ROCM_HOME", "ROCM_PATH", "PYTORCH_NVCC",
            "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CUDA_INC_PATH", "TORCH_CUDA_ARCH_LIST",
            "PYTORCH_ROCM_ARCH", "TORCH_XPU_ARCH_LIST")


def _program(name: str | None) -> list | None:
    """[realpath, size, mtime_ns] of the program `name` finds on PATH (None if none)."""
    path = shutil.which(name) if name else None
    if not path:
        return None
    real = os.path.realpath(path)
    st = os.stat(real)
    return [real, st.st_size, st.st_mtime_ns]


def _torch_version_text() -> str:
    import torch  # noqa: PLC0415 (the worker has imported it already)

    path = os.path.join(os.path.dirname(torch.__file__), "version.py")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return f"{torch.__version__} {torch.version.cuda} {torch.version.hip}"


def _gpu_models() -> list:
    """The NVIDIA driver's model line of each GPU of the host (no CUDA started)."""
    models = []
    for path in glob.glob("/proc/driver/nvidia/gpus/*/information"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                models += [line.strip() for line in f if line.startswith("Model:")]
        except OSError:
            pass
    return sorted(models)


def _cuda_arch(device: str):
    """What torch builds CUDA sources for when TORCH_CUDA_ARCH_LIST is unset (then the variable
    itself is in the key): the visible devices' capabilities on CUDA; off CUDA, where torch
    still targets the GPUs it can see, the visible set and the host's GPU models, read without
    starting CUDA; None where the host has no GPU (torch targets its whole list)."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return None
    if device == "cuda":
        import torch  # noqa: PLC0415

        return sorted({"%d.%d" % torch.cuda.get_device_capability(i)
                       for i in range(torch.cuda.device_count())})
    models = _gpu_models()
    return {"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "gpus": models} if models else None


def toolchain(device: str) -> dict:
    """What besides the code decides a build's artefact, on this worker (torch imported)."""
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    return {
        "format": FORMAT,
        "torch": hashlib.sha256(_torch_version_text().encode()).hexdigest(),
        "python": [sys.implementation.cache_tag, sysconfig.get_config_var("SOABI")],
        "machine": platform.machine(),
        "device": device,
        "cuda_arch": _cuda_arch(device),
        "cxx": _program(os.environ.get("CXX", "c++")),
        "nvcc": _program(nvcc) if os.path.exists(nvcc) else None,
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
    }


def key(role: str, code: str, tools: dict) -> str:
    """32 hex digits of SHA-256 over the role, the code text and the toolchain."""
    h = hashlib.sha256()
    for part in (role, code, json.dumps(tools, sort_keys=True)):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def use(cache_dir: str, build_key: str) -> str:
    """Points this process's torch extension and Triton caches at the key's entry; returns it."""
    entry = entry_dir(cache_dir, build_key)
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(entry, "torch_extensions")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(entry, "triton")
    return entry


def mark_built(entry: str, info: dict) -> bool:
    """After a load that succeeded: records the entry (atomically) if the load built anything
    into it and no load recorded it before. True when this call wrote the record."""
    if not os.path.isdir(entry) or is_built(entry):
        return False
    fd, tmp = tempfile.mkstemp(prefix=".kcv-build-", dir=entry)
    with os.fdopen(fd, "w") as f:
        json.dump(info, f, sort_keys=True)
    os.replace(tmp, os.path.join(entry, MARKER))
    return True
