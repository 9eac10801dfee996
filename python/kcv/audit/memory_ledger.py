"""One host-memory budget for the orchestrator processes of `kcv audit --procs P`.

Each process keeps its own MemoryGate (memory.py) for its slots; with a ledger the gates also
count what the other processes hold. The ledger is a small file of P rows, one per process, each
the bytes that process holds and has reserved (two little-endian int64). A process writes only its
own row and reads every row, both under an fcntl lock on the file, so a check for room and the
taking of it are one step across processes. The launcher creates the file, gives each child its
row, and zeroes a child's row when the child exits (a killed child cannot zero it itself)."""

from __future__ import annotations

import fcntl
import os
import struct
from contextlib import contextmanager

_ROW = struct.Struct("<qq")  # used, reserved


class Ledger:
    """Row `row` of the ledger file at `path`, opened for reading and writing."""

    def __init__(self, path: str, row: int):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        self.rows = os.fstat(self.fd).st_size // _ROW.size
        if not 0 <= row < self.rows:
            os.close(self.fd)
            raise ValueError(f"memory ledger {path!r}: row {row} of {self.rows}")
        self.row = row

    @staticmethod
    def create(path: str, rows: int):
        """A ledger of `rows` zeroed rows at `path` (replacing any file there)."""
        with open(path, "wb") as f:
            f.write(bytes(_ROW.size * rows))

    @staticmethod
    def clear(path: str, row: int):
        """Zeroes one row: what a process that has exited no longer holds."""
        ledger = Ledger(path, row)
        try:
            with ledger.locked():
                ledger.publish(0, 0)
        finally:
            ledger.close()

    @contextmanager
    def locked(self):
        """The file's lock, across processes (within a process the gate's own lock orders the
        threads: fcntl locks belong to the process)."""
        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def others(self) -> int:
        """Bytes held and reserved by the other processes. Call under locked()."""
        data = os.pread(self.fd, _ROW.size * self.rows, 0)
        return sum(used + reserved for k, (used, reserved) in enumerate(_ROW.iter_unpack(data))
                   if k != self.row)

    def publish(self, used: int, reserved: int):
        """This process's row. Call under locked()."""
        os.pwrite(self.fd, _ROW.pack(used, reserved), _ROW.size * self.row)

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
