"""Sizing a KernelBench problem on torch's meta device: shapes and dtypes, no memory, no data.

The candidate's load draws get_inputs() here (meta_sample) since it needs only which items are
tensors and the values of the others. The reference's load sizes the whole problem here first
when the audit asks (size_on_meta): a problem of gigabytes that the audit will judge at a
reduced shape is then never drawn or run at its own shape. Anything meta cannot answer (no meta
kernel, .item(), a real generator, a recurrent layer stepping for minutes) returns None and the
caller does it for real, so a result here is only ever an answer a real run would give.
kcv.worker.facts traces the problem here at bumped constants too (size_on_meta's
during_forward), to learn which size constant sets each reduction's length. Where the forward
cannot be sized, the model's own bytes still can (model_bytes_on_meta): a shape whose weights
alone exceed the probe budget is refused without building them.
"""

import signal
import threading
import time
from contextlib import contextmanager, nullcontext

import torch

from kcv.worker.outputs import BadOutput, flatten

# Seconds for the meta build and forward: recurrent layers (LSTM, GRU) step through their
# sequence on meta for minutes (and are small problems), and every other corpus reference sizes
# in well under 2 s; past this the load is the real one. Each reference-shape load of a
# recurrent problem pays it in full.
META_FORWARD_S = 3.0  # seconds of this process's CPU time (cpu_clock), not of the wall clock
# A forward that waits rather than computes is stopped after this many times its CPU budget.
WALL_BACKSTOP = 20


def cpu_clock() -> float:
    """The CPU time this process has used (all its threads), in seconds: the clock of meta's
    budgets, so whether a trace finishes within one is the same on an idle host and on one where
    a dozen audits share the cores (a wall-clock budget made a problem's facts, and so which
    gates apply to it, depend on the load)."""
    return time.process_time()


def _plain(x) -> bool:
    """A value that is the same whichever device get_inputs made its tensors on."""
    if isinstance(x, (list, tuple)):
        return all(_plain(v) for v in x)
    return x is None or isinstance(x, (bool, int, float, complex, str))


def meta_sample(ref, seed: int) -> list | None:
    """get_inputs() under `seed` on the meta device, or None where a real draw could give the
    candidate other non-tensor arguments than the reference's: it failed (.item(), numpy), a
    non-tensor item holds a tensor or anything but plain values, it drew from a real generator
    (an explicit device: the draws after it would differ), or it changed torch's global state
    (default device, torch-function modes), which is then put back for the real draw to make
    as the reference's does. Not seen: a default device get_inputs sets inside the meta
    context, which its exit undoes (no corpus reference sets one)."""
    torch.manual_seed(seed)
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    with _global_state_kept() as changed:
        try:
            with torch.device("meta"):
                sample = list(ref.get_inputs())
        except Exception:  # noqa: BLE001 - drawn for real by the caller, which reports its errors
            sample = None
    if changed() or sample is None or not torch.equal(torch.get_rng_state(), rng):
        return None
    if cuda_rng is not None and not all(
            torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), cuda_rng)):
        return None
    if not all(isinstance(x, torch.Tensor) or _plain(x) for x in sample):
        return None
    return sample


@contextmanager
def _global_state_kept():
    """Puts back the default device and pops torch-function modes the block left entered (a
    real run enters them again); yields a function telling whether it had to."""
    device = torch.get_default_device()
    depth = torch._C._len_torch_function_stack()
    changed = []
    try:
        yield lambda: bool(changed)
    finally:
        while torch._C._len_torch_function_stack() > depth:
            torch._C._pop_torch_function_stack()
            changed.append("mode")
        if torch.get_default_device() != device:
            torch.set_default_device(device)
            changed.append("device")


_warm = False


def warm_up_meta() -> None:
    """The first meta op of a process imports some 400 modules (torch._decomp, sympy, ...): over
    a second on an idle host, several on a loaded one. Done once, outside the timer, so the
    limit times the problem only."""
    global _warm
    if not _warm:
        torch.empty(1, device="meta") * 1.0 + 1.0
        _warm = True


class _TooSlow(BaseException):
    """Raised by the timer; a BaseException so that reference code's `except Exception` cannot
    swallow it."""


@contextmanager
def _time_limit(seconds: float):
    """Interrupts the block after `seconds` of this process's CPU time (SIGPROF), or after
    WALL_BACKSTOP times that on the wall clock (SIGALRM: a block that waits); the worker serves
    requests on its main thread, where the signals are handled; elsewhere the caller must not
    start the block (see size_on_meta)."""
    def too_slow(signum, frame):
        raise _TooSlow()

    previous = {s: signal.signal(s, too_slow) for s in (signal.SIGPROF, signal.SIGALRM)}
    try:
        signal.setitimer(signal.ITIMER_PROF, seconds)
        signal.setitimer(signal.ITIMER_REAL, seconds * WALL_BACKSTOP)
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # a timer may fire just before it is cancelled
            for s, handler in previous.items():
                signal.signal(s, handler)


@contextmanager
def _on_meta(limit_s: float):
    """The block on the meta device, without gradients, under the time limit (innermost: its
    interrupt leaves through the other contexts' exits), with torch's global state put back;
    yields _global_state_kept's changed(). Whatever the block raises, the timer's interrupt
    included, ends it there and is not raised again: the caller sees what the block did not
    assign (the real load says what failed)."""
    warm_up_meta()
    with _global_state_kept() as changed:
        try:
            with torch.device("meta"), torch.no_grad(), _time_limit(limit_s):
                yield changed
        except (_TooSlow, Exception):  # noqa: BLE001 - see above
            pass


def _build(ref, seed: int):
    """Model built from get_init_inputs() under `seed`, as the real load builds it."""
    torch.manual_seed(seed)
    return ref.Model(*ref.get_init_inputs())


def size_on_meta(ref, seed: int, limit_s: float = META_FORWARD_S,
                 during_forward=None) -> tuple[list, list] | None:
    """(get_inputs()'s items, the forward's output tensors), all tensors on meta: Model built
    from get_init_inputs() and run on meta_sample's draw, each under `seed` as the real load
    does; None where meta cannot tell (meta_sample refused, the build or forward raised, a
    non-tensor output, over `limit_s`, or not on the main thread, where no timer can stop it).
    `during_forward` (a context manager, e.g. kcv.worker.facts' op recorder) is entered around
    the forward only, not the build: facts trace a problem at other constants this way."""
    if threading.current_thread() is not threading.main_thread():
        return None
    sample = meta_sample(ref, seed)
    if sample is None:
        return None
    outs = None
    with _on_meta(limit_s) as changed:
        model = _build(ref, seed)
        torch.manual_seed(seed)
        with during_forward if during_forward is not None else nullcontext():
            outs = flatten(model(*sample))
    if outs is None or changed() or not all(t.device.type == "meta" for t in outs):
        return None
    return sample, outs


def model_bytes_on_meta(ref, seed: int, limit_s: float = META_FORWARD_S) -> int | None:
    """The bytes the reference's two models hold at this shape: Model built from
    get_init_inputs() under `seed` on meta, its parameters and buffers counted as built (the
    float32 model) and again with 8 bytes a floating element (the float64 one, kcv.worker.float64);
    None where meta cannot build it (the build raised or ran over `limit_s`, or not on the main
    thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    model = None
    with _on_meta(limit_s) as changed:
        model = _build(ref, seed)
    if changed() or not isinstance(model, torch.nn.Module):
        return None
    total = 0
    for t in [*model.parameters(), *model.buffers()]:
        # the float32 model's tensor as built, and the float64 model's copy of it
        total += t.numel() * (t.element_size() + (8 if t.is_floating_point() else t.element_size()))
    return total
