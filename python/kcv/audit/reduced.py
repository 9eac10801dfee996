"""The reduced shape of a problem too large to judge at its own (KernelConfig.reduce_over_bytes;
kernel.py judges the kernel there, replica and gates alike).

rescale.reduce assumes every size scales the bytes linearly, which fails where a size does not
reach the largest tensor (a matmul's inner dimension) or where the reference takes only some
shapes (a loss whose targets broadcast against its predictions only at the reference batch).
So a reduced shape is tried, not trusted: the reference sizes it (sizing.py: its load runs the
forward on meta, or for real, which is where a shape it does not take fails), a shape still over
the limit is reduced again from there, and one the reference fails at is given up and another
tried without those names, up to TRIES sizings."""

from __future__ import annotations

import json

from kcv.audit import rescale
from kcv.audit.sizing import ShapeRefused, Sized

TRIES = 3


class NoReducedShape(Exception):
    """No shape within TRIES that the reference takes (or no size to shrink): judge the kernel
    at its own shape."""


def describe(override: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in override.items())


def mark(records: list[dict], shape: dict):
    """Every verdict judged at a reduced shape says so in its evidence (key "battery_shape",
    the name the store's readers know)."""
    for r in records:
        ev = json.loads(r.get("evidence_json") or "{}")
        ev["battery_shape"] = shape
        r["evidence_json"] = json.dumps(ev, sort_keys=True)


def _planned_shrink(consts: dict, step: dict) -> float:
    """By how much a step means to shrink the bytes, if each size scaled them linearly."""
    out = 1.0
    for name, new in step.items():
        out *= consts[name] / new
    return out


def search(sized: Sized, io: int, over_bytes: int, to_bytes: int, try_shape, notes: list,
           drop=lambda result: None):
    """(what try_shape returned for the shape kept, that shape's override, its bytes).
    try_shape(override, desc) -> (result, inputs + outputs bytes), or raises ShapeRefused; a
    result not kept is given to drop (default: nothing). The first shape within the limit
    is kept. One still over it is held as the best so far and reduced again from; a step that
    shrank the bytes far less than it meant to (a size that does not reach the largest tensor:
    under 2x, or under the square root of a smaller plan) is dropped and its names avoided.
    When no further shape is found the best is returned even over the limit (started again if
    it was closed for a later try); NoReducedShape when there is none. Tries given up are added
    to notes."""
    consts = dict(sized.constants)
    override: dict = {}
    avoid: set = set()
    best = None  # (override, bytes): the smallest shape taken, over the limit
    held = None  # its pair while no later try has started
    rejected: list[str] = []
    dropped: list[str] = []
    current, why = io, f"{TRIES} tries"
    for _ in range(TRIES):
        step, reason = rescale.reduce(consts, sized.in_get_inputs, sized.in_init,
                                      current / max(1, to_bytes), avoid)
        if step is None:
            why = reason
            break
        trial = {**override, **step}
        desc = describe(trial)
        if held is not None:  # not held beside the next try; started again if it stays the best
            drop(held)
            held = None
        try:
            result, small_io = try_shape(trial, desc)
        except ShapeRefused as e:
            notes.append(f"the reference fails at the reduced shape {desc}: {e}"[:500])
            rejected.append(desc)
            avoid |= set(step)
            continue
        if small_io <= over_bytes:
            return result, trial, small_io
        if small_io * min(2.0, _planned_shrink(consts, step) ** 0.5) > current:
            drop(result)
            notes.append(f"the reduced shape {desc} still has {small_io / 2**30:.2f} GiB in + "
                         f"out: {describe(step)} does not shrink it, dropped")
            dropped.append(desc)
            avoid |= set(step)
            continue
        best, held = (trial, small_io), result
        notes.append(f"the reduced shape {desc} still has {small_io / 2**30:.2f} GiB in + out")
        override, current = trial, small_io
        consts.update(trial)
    if best is None:
        tried = ([f"{d} (the reference fails)" for d in rejected]
                 + [f"{d} (does not shrink it)" for d in dropped])
        if not tried:
            raise NoReducedShape(f"no reduced shape: {why}")
        raise NoReducedShape(f"no reduced shape (tried {'; '.join(tried)}: {why})")
    trial, small_io = best
    if held is None:
        try:
            held, small_io = try_shape(trial, describe(trial))  # it was taken before
        except ShapeRefused as e:
            raise NoReducedShape(f"the reduced shape {describe(trial)} failed when started "
                                 f"again: {e}") from e
    notes.append(f"the reduced shape {describe(trial)} is the smallest found, over "
                 f"{over_bytes / 2**30:g} GiB")
    return held, trial, small_io


