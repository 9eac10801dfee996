"""The describe task's `device_code` (docs/06 §7.4): what kcv's resource checks (RES-02) read.

- `libraries`: every shared library under the candidate's TORCH_EXTENSIONS_DIR (the directory
  kcv.worker.problem.prepare_environment set for this candidate's code before it was imported, so
  it holds exactly what torch.utils.cpp_extension built, or reused, for it); kcv runs cuobjdump
  on them for registers, spills and shared memory.
- `triton`: the compiled kernels in the device caches of the module's Triton JIT functions,
  with the metadata Triton knows once a kernel is loaded: n_regs, n_spills, shared (bytes) and
  num_warps (null where Triton has not filled one in). Triton's interpreter (the CPU worker)
  compiles nothing, so there it is [].

The caches are read defensively: their layout changed across Triton 3.x (a `cache` dict per
device in older releases, `device_caches` tuples whose first item is the kernel dict later).
"""

import os

from kcv.worker.autotune import triton_objects


def libraries(extensions_dir: str | None) -> list:
    """Sorted absolute paths of the .so files under `extensions_dir` (none when unset)."""
    if not extensions_dir or not os.path.isdir(extensions_dir):
        return []
    found = []
    for root, _dirs, files in os.walk(extensions_dir):
        found.extend(os.path.join(root, f) for f in files if f.endswith(".so"))
    return sorted(os.path.abspath(p) for p in found)


def _kernel_dicts(fn) -> list:
    caches = getattr(fn, "device_caches", None)
    if isinstance(caches, dict):
        out = []
        for entry in caches.values():
            first = entry[0] if isinstance(entry, tuple) and entry else entry
            if isinstance(first, dict):
                out.append(first)
        return out
    old = getattr(fn, "cache", None)  # Triton 2.x: {device: {key: kernel}}
    if isinstance(old, dict):
        return [v for v in old.values() if isinstance(v, dict)]
    return []


def _number(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _kernel(name: str, kernel) -> dict | None:
    metadata = getattr(kernel, "metadata", None)
    if metadata is None:  # a compile still in flight (a future), or not a compiled kernel
        return None
    return {"name": getattr(kernel, "name", None) or name,
            "n_regs": _number(getattr(kernel, "n_regs", None)),
            "n_spills": _number(getattr(kernel, "n_spills", None)),
            "shared": _number(getattr(metadata, "shared", None)),
            "num_warps": _number(getattr(metadata, "num_warps", None))}


def triton_kernels(namespace: dict) -> list:
    """[{"name", "n_regs", "n_spills", "shared", "num_warps"}] of the compiled kernels."""
    out = []
    for name, obj in triton_objects(namespace):
        for kernels in _kernel_dicts(obj):
            for kernel in list(kernels.values()):
                entry = _kernel(getattr(obj, "__name__", None) or name, kernel)
                if entry is not None:
                    out.append(entry)
    return out


def device_code(namespace: dict, extensions_dir: str | None) -> dict:
    """The describe reply's `device_code` object."""
    return {"libraries": libraries(extensions_dir), "triton": triton_kernels(namespace)}
