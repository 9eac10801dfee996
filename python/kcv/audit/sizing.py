"""How big a problem is at a shape, asked of the reference worker alone (docs/06 §7.1).

The reference loads with `size_on_meta_over`: a problem over that many bytes of inputs + outputs
is sized on the meta device and nothing is drawn or run. Only sizes are read here; every verdict
comes from kcv._core.verify_module. A reference that does not load here is not this module's
business either: verify_module records it with its status.

The worker is kcv._core.start_reference's, started exactly as verify_module starts its
judge-shape reference. Where it loaded for real (not only sized) and `keep` asks for it, Sized
holds it open (`reference`) so that verify_module adopts it: the problem is then loaded, drawn
and traced once per kernel, not twice."""

from __future__ import annotations

from dataclasses import dataclass, field

from kcv.audit.workers import worker_command

DTYPE_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}


@dataclass
class Sized:
    input_bytes: int
    output_bytes: int
    sized_on_meta: bool
    constants: dict = field(default_factory=dict)  # the module's int constants at this shape
    in_get_inputs: list = field(default_factory=list)  # constants get_inputs reads
    in_init: list = field(default_factory=list)  # constants get_init_inputs reads
    reference: object = None  # kcv._core.StartedReference kept open (keep=True, a real load)

    @property
    def io_bytes(self) -> int:
        return self.input_bytes + self.output_bytes

    def close(self) -> None:
        """Ends the kept reference worker, if any (verify_module did not take it)."""
        if self.reference is not None:
            self.reference.close()
            self.reference = None


class ShapeRefused(Exception):
    """The reference does not load at this shape (the message says why)."""


def tensor_bytes(specs) -> int:
    total = 0
    for t in specs:
        n = 1
        for d in t["shape"]:
            n *= int(d)
        total += n * DTYPE_BYTES.get(t["dtype"], 8)
    return total


def size_problem(row: dict, *, device: str, cache_dir: str | None, constants: dict | None,
                 over_bytes: int, gpu: str | None, threads: int | None, memory_limit_bytes: int,
                 timeout_s: float, keep: bool = False, command: list[str] | None = None,
                 shm_dir: str = "") -> Sized:
    """The reference's description at `constants`; ShapeRefused when it does not load. With
    `keep`, a reference that loaded for real stays open in Sized.reference (close() ends it).
    `command`: the reference worker's argv (default: a plain worker on `gpu`); `shm_dir`: its
    call files' directory ("": /dev/shm)."""
    from kcv import _core

    try:
        started = _core.start_reference(
            row, worker_command=command or worker_command(gpu, threads), device=device,
            cache_dir=cache_dir or "", memory_limit_bytes=memory_limit_bytes,
            load_timeout_s=timeout_s, size_on_meta_over=max(0, int(over_bytes)),
            constants={k: int(v) for k, v in (constants or {}).items()},
            reference_shm_dir=shm_dir)
    except _core.Error as e:  # the worker's typed error (kcv._core: CandidateError, ...)
        raise ShapeRefused(str(e)) from e
    problem = (started.reply or {}).get("problem") or {}
    tensors = [i for i in problem.get("inputs", []) if i.get("kind") == "tensor"]
    facts = problem.get("facts") or {}
    consts = facts.get("constants") or []
    sized = Sized(tensor_bytes(tensors), tensor_bytes(problem.get("outputs", [])),
                  problem.get("sized_on_meta") is True, dict(problem.get("constants") or {}),
                  [c["name"] for c in consts if c.get("get_inputs")],
                  [c["name"] for c in consts if c.get("init")])
    if keep and not sized.sized_on_meta:
        sized.reference = started
    else:
        started.close()
    return sized
