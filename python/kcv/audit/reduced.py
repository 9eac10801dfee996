"""The worker pair at a reduced shape, for a problem too large to judge at its own
(KernelConfig.reduce_over_bytes; kernel.py judges the kernel on it, replica and battery).

rescale.reduce assumes every size scales the bytes linearly, which fails where a size does not
reach the largest tensor (a matmul's inner dimension) or where the reference takes only some
shapes (a loss whose targets broadcast against its predictions only at the reference batch).
So a reduced shape is tried, not trusted: its pair is started (the reference's load runs its
forward once, which is where a shape it does not take fails), its bytes are measured, and a
shape still over the limit is reduced again from there; one the reference fails at is given
up and another tried without those names, up to TRIES pairs."""

from __future__ import annotations

import json

from kcv.audit import rescale
from kcv.audit.session import LoadFailure, ProblemSession

TRIES = 3


class NoReducedShape(Exception):
    """No shape within TRIES that the reference takes (or no size to shrink): judge the kernel
    at its own shape."""


def describe(override: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in override.items())


def mark(records: list[dict], shape: dict):
    """Every verdict of a battery run at a reduced shape says so in its evidence."""
    for r in records:
        ev = json.loads(r.get("evidence_json") or "{}")
        ev["battery_shape"] = shape
        r["evidence_json"] = json.dumps(ev, sort_keys=True)


class ShapeRejected(Exception):
    """The reference does not take this shape (search() tries another without its names)."""


def _planned_shrink(consts: dict, step: dict) -> float:
    """By how much a step means to shrink the bytes, if each size scaled them linearly."""
    out = 1.0
    for name, new in step.items():
        out *= consts[name] / new
    return out


def search(reference_code: str, constants: dict, io: int, over_bytes: int, to_bytes: int,
           try_shape, notes: list, drop=lambda result: result.close()):
    """(what try_shape returned for the shape kept, that shape's override, its bytes).
    try_shape(override, desc) -> (result, inputs + outputs bytes), or raises ShapeRejected; a
    result not kept is given to drop (default: its close()). The first shape within the limit
    is kept. One still over it is held as the best so far and reduced again from; a step that
    shrank the bytes far less than it meant to (a size that does not reach the largest tensor:
    under 2x, or under the square root of a smaller plan) is dropped and its names avoided.
    When no further shape is found the best is returned even over the limit (started again if
    it was closed for a later try); NoReducedShape when there is none. Tries given up are added
    to notes."""
    consts = dict(constants)
    override: dict = {}
    avoid: set = set()
    best = None  # (override, bytes): the smallest shape taken, over the limit
    held = None  # its pair while no later try has started
    rejected: list[str] = []
    dropped: list[str] = []
    current, why = io, f"{TRIES} tries"
    for _ in range(TRIES):
        step, reason = rescale.reduce(reference_code, consts, current / max(1, to_bytes), avoid)
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
        except ShapeRejected as e:
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
        except ShapeRejected as e:
            raise NoReducedShape(f"the reduced shape {describe(trial)} failed when started "
                                 f"again: {e}") from e
    notes.append(f"the reduced shape {describe(trial)} is the smallest found, over "
                 f"{over_bytes / 2**30:g} GiB")
    return held, trial, small_io


def start(row: dict, constants: dict, io: int, over_bytes: int, to_bytes: int, make_session,
          notes: list, given_up: list) -> tuple[ProblemSession, dict, int]:
    """(the started session, its constants override, its inputs + outputs bytes): search() over
    worker pairs. make_session(override, label) -> an unstarted ProblemSession. A candidate that
    fails to load there keeps its load status, with a message naming the shape (it loaded at
    the reference shape). Every pair closed on the way is appended to given_up (its costs)."""

    def try_pair(override, desc):
        small = make_session(override, f"reduced {desc}")
        given_up.append(small)
        try:
            small.start_both()
        except LoadFailure as e:
            small.close()
            if e.role == "candidate":
                raise LoadFailure(e.role, e.status, f"at the reduced shape {desc} (it loaded "
                                                    f"at the reference shape): {e.message}") from e
            raise ShapeRejected(str(e)) from e
        except BaseException:
            small.close()
            raise
        return small, small.input_bytes() + small.output_bytes()

    result = search(row.get("reference_code", ""), constants, io, over_bytes, to_bytes, try_pair,
                    notes)
    given_up.remove(result[0])  # kept: its costs are the battery's
    return result
