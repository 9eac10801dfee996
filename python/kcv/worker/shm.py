"""Mapping a call's shared-memory file (docs/06_worker_protocol.md §3).

The file is mapped with libc's mmap through ctypes, not Python's mmap module: Python refuses to
close an mmap while tensors still export its buffer, and a candidate that keeps a reference to
an input or output view would then keep the pages alive past the call. Here close() replaces the
mapping, atomically (MAP_FIXED), by an inaccessible anonymous reservation of the same range, so
 - a late write through a kept view (a deferred thread, a cached tensor) faults: the worker dies
   of SIGSEGV and kcv records a crash instead of silently accepting the work;
 - every file is mapped at a random address (a hint drawn from 64 TiB of address space, which
   the kernel honours when the range is free), and never at the previous call's (that range stays
   reserved until the next file is mapped): results cached by data_ptr() do not hit again.
Linux only (the constants below are those of x86-64 and aarch64).
"""

import ctypes
import os
import random

PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000
MAP_POPULATE = 0x8000
PAGE = os.sysconf("SC_PAGE_SIZE")
_HINT_LOW, _HINT_HIGH = 1 << 40, 1 << 46  # below the usual mmap base, above heap and binary

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _mmap(addr, size, prot, flags, fd) -> int:
    p = _libc.mmap(addr, size, prot, flags, fd, 0)
    if p is None or p == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, f"mmap of {size} bytes: {os.strerror(err)}")
    return p


def _reserve(size: int, addr=None) -> int:
    flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (MAP_FIXED if addr else 0)
    return _mmap(addr, size, PROT_NONE, flags, -1)


class _Reservation:
    """The inaccessible range left where the previous call's file was mapped."""

    addr = 0
    size = 0

    @classmethod
    def release(cls) -> None:
        if cls.addr:
            _libc.munmap(cls.addr, cls.size)
        cls.addr, cls.size = 0, 0


class CallFile:
    """The call's file mapped read-write and shared; close() leaves an inaccessible hole."""

    def __init__(self, path: str, size: int):
        if not isinstance(path, str) or not path:
            raise ValueError("shm.path: not a non-empty string")
        if not isinstance(size, int) or size <= 0:
            raise ValueError("shm.size: not a positive integer")
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            have = os.fstat(fd).st_size
            if have < size:
                raise ValueError(f"shm.size: {size} bytes, but '{path}' has only {have}")
            hint = random.randrange(_HINT_LOW, _HINT_HIGH) // PAGE * PAGE
            # populated at once: the call reads every input and writes every output, and one
            # mapping pass costs less than a fault per 4 KiB page of a gigabyte file
            self.addr = _mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd)
        finally:
            os.close(fd)
        self.size = size
        _Reservation.release()

    def buffer(self):
        """A writable ctypes array over the whole file (no ownership: close() ends it)."""
        return (ctypes.c_uint8 * self.size).from_address(self.addr)

    def close(self) -> None:
        """Unmaps the file, keeping its range reserved until the next call's file is mapped."""
        if not self.addr:
            return
        _reserve(self.size, self.addr)  # MAP_FIXED replaces the file mapping in one step
        _Reservation.addr, _Reservation.size = self.addr, self.size
        self.addr = 0
