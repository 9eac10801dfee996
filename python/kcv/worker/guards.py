"""Device-side checks of a candidate's run on CUDA (the run task's device_guard, guard_seed and
shuffle_seed, and the sticky-error check; docs/06_worker_protocol.md §7.3).

kcv's own guard bands surround the host copies in the shared file; a kernel that writes out of
bounds on the device writes into whatever the caching allocator put next to the input, which
nobody checks. guarded_copy() places each input's device copy (its span, strides kept, as
kcv.worker.devices does) inside one allocation between two bands filled with bytes drawn from
guard_seed; changed() compares the bands after the forward. The front band is the requested
size rounded up to 256 bytes, so the input starts 256-byte aligned as a cudaMalloc'ed tensor
would (vectorized loads stay legal), plus the task's device_offset (a multiple of 16: ORD-02's
repetitions put their inputs at other alignments); the back band is exactly the requested size. `first` of a
report is the lowest-addressed changed guard byte, relative to the input's first byte: negative
in the front band, at or past the input's last byte in the back band.

shuffle_block() allocates 1 to 64 MiB (1 + seed % 64) before the forward and fills it with
bytes from a generator seeded with shuffle_seed; the caller drops it after the forward, so the
candidate's allocations land at other addresses from call to call, and memory freed after a
call holds the seed's bytes instead of this call's results.

On the CPU none of this applies (kcv's host guards see a CPU kernel's stray writes): the
candidate side calls these on CUDA only.
"""

import torch

from kcv.worker.devices import _span
from kcv.worker.errors import summary_line

_ALIGN = 256
_MIB = 1 << 20


def _random_bytes(n: int, generator: torch.Generator, device: str) -> torch.Tensor:
    return torch.randint(0, 256, (n,), dtype=torch.uint8, device=device, generator=generator)


class GuardedInput:
    """One input's device copy between two guard bands (module docstring)."""

    def __init__(self, view: torch.Tensor, device: str, guard: int, generator: torch.Generator,
                 offset: int = 0):
        span = _span(view)
        self.data_bytes = span.numel() * span.element_size()
        self.front = -(-guard // _ALIGN) * _ALIGN + offset
        self.buffer = torch.empty(self.front + self.data_bytes + guard, dtype=torch.uint8,
                                  device=device)
        self.expected_front = _random_bytes(self.front, generator, device)
        self.expected_back = _random_bytes(guard, generator, device)
        self.buffer[: self.front].copy_(self.expected_front)
        self.buffer[self.front + self.data_bytes:].copy_(self.expected_back)
        data = self.buffer[self.front: self.front + self.data_bytes].view(view.dtype)
        data.copy_(span)
        self.tensor = data.as_strided(view.shape, view.stride())

    def first_changed(self) -> int | None:
        """The lowest changed guard byte relative to the input's first byte, or None."""
        front = (self.buffer[: self.front] != self.expected_front).nonzero()
        if front.numel():
            return int(front[0]) - self.front
        back = (self.buffer[self.front + self.data_bytes:] != self.expected_back).nonzero()
        if back.numel():
            return self.data_bytes + int(back[0])
        return None


def guarded_copies(views: list, device: str, guard: int, seed: int, offset: int = 0) -> list:
    """A GuardedInput per view (None for an empty view, which has nothing to guard); `offset`
    bytes (a multiple of 16) move each input past its 256-byte boundary (task device_offset)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return [GuardedInput(v, device, guard, generator, offset) if v.numel() else None
            for v in views]


def changed(guarded: list) -> list:
    """The result reply's device_guards: [{"input": k, "first": byte}] for changed bands."""
    out = []
    for k, g in enumerate(guarded):
        first = g.first_changed() if g is not None else None
        if first is not None:
            out.append({"input": k, "first": first})
    return out


def shuffle_size(seed: int) -> int:
    """Bytes of the shuffle block for `seed`: 1 to 64 MiB."""
    return (1 + seed % 64) * _MIB


def shuffle_block(seed: int, device: str) -> torch.Tensor:
    """The filled block; keep it alive through the forward, drop it after."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return _random_bytes(shuffle_size(seed), generator, device)


def device_error(synchronize) -> str | None:
    """None when `synchronize()` (torch.cuda.synchronize, bound at import) succeeds, else the
    error's last line: the device is in a sticky error state (an illegal address, say) and
    every later call of this process would fail too."""
    try:
        synchronize()
    except BaseException as e:  # noqa: BLE001 (whatever the driver raises)
        return summary_line(e)
    return None
