"""Host memory as a shared budget of the audit's parallel slots.

The trusted side holds several copies of a kernel's data while it judges a probe: the drawn and
transformed inputs, the fp64 reference values, bounds and eager runs, the candidate's output of
every call, and the shared-memory regions of the calls in flight. With a
dozen slots on problems of hundreds of megabytes that outgrew a 128 GB host on the H200 (the
kernel's OOM killer took the orchestrator). So each kernel, once its
problem is known, holds an estimate of what it will keep until it is done, and waits while the
running kernels' estimates would not leave room; a kernel whose estimate exceeds the whole
budget runs alone at the end, when nothing else runs. A kernel that may be postponed waits only
KernelConfig.memory_postpone_s and gives its slot up (acquire() returns Busy, with its
estimate: a value, not an exception through the kernel's path); the orchestrator runs it again
once reserve() finds room for its estimate."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from kcv.audit.memory_ledger import Ledger

# Copies the trusted side holds at its peak for one probe (src/kernelbench): of the inputs, the
# reference's draw, the probe's transformed tensors and the executor's guarded copy of a call;
# of the outputs (as f32), the fp64 value, tau and the declared eager run as fp64 (2 each), the
# alternative fp64 run, two eager f32 runs, and the candidate outputs of up to four calls. By count,
# plus the reference worker's own copy of the inputs, and the reference's kept call file
# (CallOptions::keep_call_file), as large as its largest call: a stage of the inputs or the fp64
# outputs, counted as one input copy and two output copies. The trusted result is made while the
# candidate's calls run (PipelineOptions::evaluate_beside_calls), so a call's own file (its
# inputs and outputs) is held beside all of that: one input copy and one output copy more. The
# kernel's first probe's draw and trusted runs are kept while other probes run (its plain fp64
# run and up to three eager runs: ModelOracle's kept runs), one input copy and five output
# copies more.
INPUT_COPIES = 7
OUTPUT_COPIES = 24


def estimate_host_bytes(input_bytes: int, output_bytes: int) -> int:
    """What one kernel's audit holds on the host at its peak, by the copies above."""
    return INPUT_COPIES * int(input_bytes) + OUTPUT_COPIES * int(output_bytes)


class MemoryBusy(Exception):
    """hold(n, timeout) found no room for n (its `need`) within the timeout."""

    def __init__(self, message: str, need: int):
        super().__init__(message)
        self.need = need


@dataclass(frozen=True)
class Busy:
    """acquire(n, timeout) found no room for n (`need`) within the timeout; nothing is held."""
    need: int
    message: str


class Held:
    """Bytes held in a MemoryGate (acquire()) until release(), which is idempotent."""

    def __init__(self, gate: "MemoryGate", n: int):
        self.gate, self.n, self.live = gate, n, True

    def release(self):
        gate = self.gate
        with gate._cond, gate._shared():
            if self.live:
                self.live = False
                gate.used -= self.n
                gate._publish()
                gate._cond.notify_all()


class Reservation:
    """Room set aside in a MemoryGate for one kernel before it holds it (MemoryGate.reserve):
    the slot that takes a postponed kernel because its estimate fits reserves that room at once,
    so no other slot counts the same free bytes while the kernel loads. hold() consumes it;
    release() gives it back if hold() never did (the kernel ended before, or needed other bytes)."""

    def __init__(self, gate: "MemoryGate", n: int):
        self.gate, self.n, self.live = gate, n, True

    def release(self):
        with self.gate._cond, self.gate._shared():
            if self.live:
                self.live = False
                self.gate.reserved -= self.n
                self.gate._publish()
                self.gate._cond.notify_all()


class MemoryGate:
    """A counting budget of bytes: hold(n) waits until n fits beside what others hold and have
    reserved (or no one holds or reserves anything: a kernel bigger than the budget still runs,
    alone). With a ledger (memory_ledger.py) the others include the other orchestrator
    processes of `kcv audit --procs`, which share the one budget."""

    # How often a wait re-reads the ledger: another process's release notifies no one here.
    LEDGER_POLL_S = 0.25

    def __init__(self, capacity_bytes: int, ledger: Ledger | None = None):
        if capacity_bytes <= 0:
            raise ValueError(f"MemoryGate: capacity must be positive, got {capacity_bytes}")
        self.capacity = int(capacity_bytes)
        self.used = 0
        self.reserved = 0
        self.ledger = ledger
        self._cond = threading.Condition()

    def _shared(self):
        """The ledger's lock (with the gate's own lock held), or nothing without a ledger."""
        return self.ledger.locked() if self.ledger is not None else nullcontext()

    def _publish(self):
        if self.ledger is not None:
            self.ledger.publish(self.used, self.reserved)

    def _taken(self) -> int:
        others = self.ledger.others() if self.ledger is not None else 0
        return self.used + self.reserved + others

    def fits(self, n: int) -> bool:
        return n <= self.capacity

    def _admits(self, n: int) -> bool:
        taken = self._taken()
        return taken == 0 or taken + n <= self.capacity

    def admits(self, n: int) -> bool:
        """Whether hold(n) would take n now without waiting: n fits beside what is held and
        reserved, or nothing is."""
        with self._cond, self._shared():
            return self._admits(n)

    def reserve(self, n: int) -> Reservation | None:
        """Sets n bytes aside now if they fit (as admits(n)), else None."""
        with self._cond, self._shared():
            if not self._admits(n):
                return None
            self.reserved += n
            self._publish()
            return Reservation(self, n)

    def _try_take(self, n: int, unreserve: int = 0) -> bool:
        """Takes n if it fits; first gives back `unreserve` bytes of a consumed reservation in the
        same step, so no other process can take that room in between."""
        with self._shared():
            self.reserved -= unreserve
            taken = self._admits(n)
            if taken:
                self.used += n
            if taken or unreserve:
                self._publish()
            return taken

    @contextmanager
    def hold(self, n: int, timeout: float | None = None, reservation: Reservation | None = None):
        """Holds n bytes until the block ends (acquire()); raises MemoryBusy where acquire()
        returns Busy."""
        got = self.acquire(n, timeout, reservation)
        if isinstance(got, Busy):
            raise MemoryBusy(got.message, got.need)
        try:
            yield
        finally:
            got.release()

    def acquire(self, n: int, timeout: float | None = None,
                reservation: Reservation | None = None) -> Held | Busy:
        """Holds n bytes until the Held is released; with a timeout, Busy when n has not fitted
        by then (nothing held). A live reservation of this gate is consumed first: its room
        counts as free here, so n up to its size is taken at once."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            unreserve = 0
            if reservation is not None and reservation.gate is self and reservation.live:
                reservation.live = False
                unreserve = reservation.n
            while not self._try_take(n, unreserve):
                unreserve = 0
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    self._cond.notify_all()  # the reservation given up may let another kernel in
                    with self._shared():
                        taken = self._taken()
                    return Busy(n, f"{n / 2**30:.1f} GiB did not fit in {timeout:g} s beside "
                                   f"{taken / 2**30:.1f} GiB held or reserved")
                if self.ledger is not None:
                    wait = self.LEDGER_POLL_S if wait is None else min(wait, self.LEDGER_POLL_S)
                self._cond.wait(wait)
        return Held(self, n)
