"""The build cache of the workers' compiles (load_inline / load, Triton), keyed by content.

Under a load's cache_dir (the directory every worker of an audit names; a sandboxed candidate
sees its kernel's scratch there, kcv.sandbox):

    builds/<key>/torch_extensions/   TORCH_EXTENSIONS_DIR of every load of that key
    builds/<key>/triton/             TRITON_CACHE_DIR of those loads
    builds/<key>/kcv-build.json      written once a load of the key succeeded: the entry
    candidates/<source>/<key>/       sandboxed candidates' entries, published by kcv (below)

The key is the SHA-256 of the role, the code text the role builds (the extension names, the
sources and the flags it passes to load_inline are in that text) and the toolchain: torch's
version file (version, CUDA, git revision), the Python ABI, the machine, the device, the CUDA
architectures the build targets (TORCH_CUDA_ARCH_LIST, else the capabilities of the visible
devices, which is what torch builds for then; off CUDA the GPUs torch can see), the compilers
it calls (path, size, mtime) and the environment variables torch.utils.cpp_extension and nvcc
read for flags. Anything that
changes the artefact changes the key; a --cache-dir kept across runs, torch upgrades or hosts
of other GPUs never hands one of them another's build.

Concurrent builds of one key share its directory: torch's JIT build takes an OS advisory lock
(torch.utils._filelock, released by the kernel when the holder dies) in each extension's build
directory and runs ninja under it, so the second worker finds ninja with nothing to do and
imports the same .so; Triton writes its cache entries by rename. A load that fails writes no
kcv-build.json: its directory is a build tree the next build resumes, never a published entry.

Sandboxed candidates build into their kernel's scratch, which dies with the kernel. So that a
re-run, another shape or another row of the same candidate code builds nothing, kcv (outside
the sandbox) publishes the scratch's finished entries when the kernel ends (publish) and copies
them into the next scratch of the same code before its sandbox starts (restore), at the same
path inside, mtimes kept, so ninja sees them up to date. Published entries are filed under the
SHA-256 of the candidate's own code text, computed by kcv, whatever the candidate wrote: a
candidate that plants a poisoned artefact in its scratch reaches only later runs of its own
code text, never another candidate or a reference. Only regular files travel (no links), up to
PUBLISH_LIMIT bytes per entry and PUBLISH_ENTRIES entries per kernel.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import re
import shutil
import stat
import sys
import sysconfig
import tempfile

FORMAT = "kcv-build-1"
MARKER = "kcv-build.json"
PUBLISH_LIMIT = 1 << 30  # bytes of one published entry
PUBLISH_ENTRIES = 4  # entries one scratch may publish (a kernel's loads share one toolchain)
_KEY = re.compile(r"^[0-9a-f]{32}$")
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


def source_key(code: str) -> str:
    """The directory published entries of this candidate code text live under."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def entry_dir(cache_dir: str, build_key: str) -> str:
    return os.path.join(cache_dir, "builds", build_key)


def use(cache_dir: str, build_key: str) -> str:
    """Points this process's torch extension and Triton caches at the key's entry; returns it."""
    entry = entry_dir(cache_dir, build_key)
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(entry, "torch_extensions")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(entry, "triton")
    return entry


def is_built(entry: str) -> bool:
    return os.path.isfile(os.path.join(entry, MARKER))


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


class _TooLarge(Exception):
    pass


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy_tree(src_fd: int, dst: str, budget: list) -> None:
    """Copies the regular files and directories under the open directory `src_fd` into `dst`
    (created), mtimes kept; links and special files are left out. Every name is opened
    relative to its directory's descriptor without following links, so a tree changed while it
    is copied cannot lead the copy outside it. budget[0]: bytes left; _TooLarge past it."""
    os.makedirs(dst, exist_ok=True)
    for entry in os.scandir(src_fd):
        st = os.stat(entry.name, dir_fd=src_fd, follow_symlinks=False)
        out = os.path.join(dst, entry.name)
        if stat.S_ISDIR(st.st_mode):
            fd = os.open(entry.name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                _copy_tree(fd, out, budget)
            finally:
                os.close(fd)
        elif stat.S_ISREG(st.st_mode):
            fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
            with os.fdopen(fd, "rb") as f, open(out, "wb") as g:
                while chunk := f.read(1 << 20):
                    budget[0] -= len(chunk)
                    if budget[0] < 0:
                        raise _TooLarge(out)
                    g.write(chunk)
                st = os.fstat(f.fileno())
            os.chmod(out, stat.S_IMODE(st.st_mode) & 0o755 | 0o600)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))


def _copy_entry(parent: str, name: str, dst: str, limit: int, finished: bool) -> bool:
    """Copies `parent`/`name` into `dst` (see _copy_tree); with `finished`, only when it holds a
    kcv-build.json that is a regular file. False when it is not copied."""
    top = os.open(parent, _DIR_FLAGS)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=top)
    finally:
        os.close(top)
    try:
        if finished:
            try:
                marker = os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if not stat.S_ISREG(marker.st_mode):
                return False
        _copy_tree(fd, dst, [limit])
        return True
    finally:
        os.close(fd)


def publish(scratch: str, cache_dir: str, code: str, limit: int = PUBLISH_LIMIT) -> list:
    """Files each finished entry of a sandboxed candidate's `scratch` (its builds/<key> with a
    kcv-build.json) under cache_dir/candidates/<source_key(code)>/<key>, unless one is there:
    copied into a private directory, then renamed into place. Returns the keys published."""
    builds = os.path.join(scratch, "builds")
    try:
        names = sorted(os.listdir(builds)) if not os.path.islink(builds) else []
    except OSError:
        return []
    home = os.path.join(cache_dir, "candidates", source_key(code))
    done = []
    for k in names:
        if len(done) == PUBLISH_ENTRIES:
            break
        if not _KEY.match(k) or os.path.exists(os.path.join(home, k)):
            continue
        os.makedirs(home, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".publish-", dir=home)
        try:
            if _copy_entry(builds, k, tmp, limit, finished=True):
                os.rename(tmp, os.path.join(home, k))  # fails if another kernel published first
                done.append(k)
                continue
        except (OSError, _TooLarge):
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    return done


def restore(cache_dir: str, code: str, scratch: str) -> list:
    """Copies the published entries of candidate code `code` into `scratch`/builds (where the
    candidate's load looks for them). Returns the keys restored."""
    home = os.path.join(cache_dir, "candidates", source_key(code))
    try:
        names = sorted(os.listdir(home))
    except OSError:
        return []
    done = []
    for k in names:
        if not _KEY.match(k):
            continue
        dst = os.path.join(scratch, "builds", k)
        try:
            _copy_entry(home, k, dst, PUBLISH_LIMIT, finished=False)
            done.append(k)
        except (OSError, _TooLarge):
            shutil.rmtree(dst, ignore_errors=True)
    return done
