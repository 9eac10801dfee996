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


def search(reference_code: str, constants: dict, io: int, over_bytes: int, to_bytes: int,
           try_shape, notes: list):
    """(what try_shape returned for the shape kept, that shape's override, its bytes).
    try_shape(override, desc) -> (result, inputs + outputs bytes), or raises ShapeRejected; a
    result given up is closed (when it has close()). NoReducedShape when no shape works. Tries
    given up are added to notes."""
    consts = dict(constants)
    override: dict = {}
    avoid: set = set()
    factor = io / max(1, to_bytes)
    why = f"{TRIES} tries"
    tried: list[str] = []
    for attempt in range(TRIES):
        step, reason = rescale.reduce(reference_code, consts, factor, avoid)
        if step is None:
            why = reason
            break
        trial = {**override, **step}
        desc = describe(trial)
        tried.append(desc)
        try:
            result, small_io = try_shape(trial, desc)
        except ShapeRejected as e:
            notes.append(f"the reference fails at the reduced shape {desc}: {e}"[:500])
            avoid |= set(step)
            continue
        further = small_io / max(1, to_bytes)
        if (small_io > over_bytes and attempt + 1 < TRIES
                and rescale.reduce(reference_code, {**consts, **trial}, further, avoid)[0]):
            if hasattr(result, "close"):
                result.close()
            notes.append(f"the reduced shape {desc} still has {small_io / 2**30:.2f} GiB in + "
                         "out: reduced again")
            override, factor = trial, further
            consts.update(trial)
            continue
        return result, trial, small_io
    if not tried:
        raise NoReducedShape(f"no reduced shape: {why}")
    raise NoReducedShape(f"no reduced shape the reference takes (tried {'; '.join(tried)}: "
                         f"{why})")


def start(row: dict, constants: dict, io: int, over_bytes: int, to_bytes: int, make_session,
          notes: list) -> tuple[ProblemSession, dict, int]:
    """(the started session, its constants override, its inputs + outputs bytes): search() over
    worker pairs. make_session(override, label) -> an unstarted ProblemSession. A candidate that
    fails to load there keeps its load status, with a message naming the shape (it loaded at
    the reference shape)."""

    def try_pair(override, desc):
        small = make_session(override, f"reduced {desc}")
        try:
            small.start_both()
        except LoadFailure as e:
            small.close()
            if e.role == "candidate":
                raise LoadFailure(e.role, e.status, f"at the reduced shape {desc} (it loaded "
                                                    f"at the reference shape): {e}") from e
            raise ShapeRejected(str(e)) from e
        except BaseException:
            small.close()
            raise
        return small, small.input_bytes() + small.output_bytes()

    return search(row.get("reference_code", ""), constants, io, over_bytes, to_bytes, try_pair,
                  notes)
