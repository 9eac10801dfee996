"""Page-locking a CUDA worker's call file for the call's copies (cudaHostRegister).

A CUDA call copies every input's span to the device, every input back and every output into the
call's file (kcv.worker.devices, kcv.worker.candidate). From pageable pages the CUDA runtime
stages each copy through its own buffers; registered pages are copied by DMA directly. On one
NVIDIA H200 host, for a 512 MiB file (256 MiB in, 256 MiB out), the three copies take 57 ms
pageable and 15 ms registered, and registering plus unregistering an already mapped file 22 ms;
with six workers at once 79 ms against 15 + 32 ms (`python3 bench/audit/worker_copies.py --mb
64 256`, and `--procs 6`). Files under PIN_FROM stay pageable: their copies take a few
milliseconds either way.

The file stays mapped with MAP_POPULATE (kcv.worker.shm): registering a mapping whose pages are
not yet mapped faults them in one by one, slower than the populated mapping when several workers
do it at once (the same benchmark's `pinned` row).

The registration goes through the CUDA runtime library torch itself uses, found among the
process's mapped files, so that a failed cudaHostRegister's error can be cleared from that
library's per-thread state (cudaGetLastError): torch checks that state after every kernel launch
and would otherwise blame the candidate's next launch for it. Where that library is not found
(a torch with the runtime linked in statically) nothing is registered and the copies are
pageable, as on the CPU.
"""

import ctypes
import functools

PIN_FROM = 16 << 20  # bytes: smaller call files are not registered


@functools.cache
def _runtime():
    """The CUDA runtime library mapped into this process (torch's), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = [line.rsplit(None, 1)[-1] for line in maps if "/libcudart.so" in line]
    except OSError:
        return None
    if not paths:
        return None
    try:
        lib = ctypes.CDLL(paths[0])  # already loaded: the same instance as torch's
    except OSError:
        return None
    lib.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    lib.cudaHostRegister.restype = ctypes.c_int
    lib.cudaHostUnregister.argtypes = [ctypes.c_void_p]
    lib.cudaHostUnregister.restype = ctypes.c_int
    lib.cudaGetLastError.argtypes = []
    lib.cudaGetLastError.restype = ctypes.c_int
    return lib


def pin(addr: int, size: int) -> bool:
    """Registers [addr, addr + size) with the CUDA runtime; False (nothing registered, no error
    left behind) when the file is small, the runtime is not found or registering fails."""
    if size < PIN_FROM:
        return False
    lib = _runtime()
    if lib is None:
        return False
    if lib.cudaHostRegister(addr, size, 0) != 0:
        lib.cudaGetLastError()  # the failure is ours: torch must not see it after a launch
        return False
    return True


def unpin(addr: int) -> None:
    """Unregisters a mapping pin() registered (before the mapping goes)."""
    lib = _runtime()
    if lib is not None and lib.cudaHostUnregister(addr) != 0:
        lib.cudaGetLastError()
