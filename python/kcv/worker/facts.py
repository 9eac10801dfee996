"""What the reference worker learns about a problem at load: the load reply's problem.facts
(docs/06_worker_protocol.md §7.2), so kcv's plans and judges need no guess from names or source.

- constants: each module-level int, and whether get_inputs / get_init_inputs read it (the names
  their bodies load, by ast; a constant reached only through another function is not seen).
- reductions, ops, minmax, stochastic: recorded by Recorder, a TorchDispatchMode active during
  the load's float32 forward (the first of three): every aten op, the (kind, length) of each
  reducing one (kcv.worker.reductions), whether an op whose NaN result depends on max/min
  semantics ran (kcv.worker.maxnum.MINMAX_OPS), and whether the forward drew random numbers.
- the `constant` of a reduction: the problem is traced again on the meta device, once at its
  own constants and once per constant that get_inputs or get_init_inputs read, with that
  constant bumped (value+1, or value*2 where +1 does not load: a head count that must divide a
  width); a reduction whose length changes at the same position of the trace gets that
  constant (the first one, in module order). Meta traces are compared with meta traces, never
  with the real run (a CUDA run and a meta run may pick different attention kernels); a real
  reduction is matched to them by (op, length), else by (kind, length). All tracing shares one
  budget of META_FORWARD_S seconds of the process's CPU time; what it does not reach, or
  where meta cannot run the problem (.item(), no meta kernel), keeps "".
- repeatable: three float32 forwards under the load's seed give bitwise equal outputs
  (compared as integers of the same width, so NaNs compare by their bits), the second and third
  on copies of the inputs placed 16 and 48 bytes past a 256-byte boundary (REPEAT_OFFSETS): the
  alignments ORD-02's repetitions give the candidate (run task device_offset), so determinism is
  declared only where the reference itself does not follow its inputs' addresses.
- trial_seeds: KernelBench's five trial seeds (manual_seed(42), then five randint draws), drawn
  from a private generator seeded the same way, so the global RNG state is not touched.
"""

import ast

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kcv.worker import maxnum, reductions
from kcv.worker.meta import META_FORWARD_S, cpu_clock, size_on_meta, warm_up_meta
from kcv.worker.opargs import bind

# random ops (aten packet names); native_dropout counts only with train and p > 0 (_draws)
STOCHASTIC = frozenset({
    "bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "normal", "normal_", "multinomial", "uniform_", "exponential_",
    "geometric_", "log_normal_", "cauchy_", "random_", "poisson", "binomial", "_standard_gamma",
    "_sample_dirichlet", "rrelu_with_noise", "native_dropout", "_fused_dropout"})
_INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _draws(func, args, kwargs) -> bool:
    name = reductions.packet(func)
    if name not in STOCHASTIC:
        return False
    if name == "native_dropout":
        a = bind(func, args, kwargs)
        return a.get("train") is not False and 0 < a.get("p", 0)
    return True


class Recorder(TorchDispatchMode):
    """Records the ops of a forward: `ops` (str of each aten op), `events` ([(op, kind,
    length)] of the reductions, in order), `minmax` and `stochastic`."""

    def __init__(self):
        super().__init__()
        self.ops, self.events = set(), []
        self.minmax = self.stochastic = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        self.ops.add(name)
        self.events.extend((name, kind, length) for kind, length in
                           reductions.terms(func, args, kwargs))
        self.minmax = self.minmax or func in maxnum.MINMAX_OPS
        self.stochastic = self.stochastic or _draws(func, args, kwargs)
        return func(*args, **kwargs)


# --- constants -----------------------------------------------------------------------------

def read_names(code: str, function: str) -> set:
    """The names the module-level function `function` of `code` loads (its last definition)."""
    body = None
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            body = node
    if body is None:
        return set()
    return {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def constant_facts(code: str | None, constants: dict) -> list:
    """facts.constants: [{"name", "value", "get_inputs", "init"}] in module order."""
    if not code:
        return []
    inputs, init = read_names(code, "get_inputs"), read_names(code, "get_init_inputs")
    return [{"name": k, "value": v, "get_inputs": k in inputs, "init": k in init}
            for k, v in constants.items()]


def _trace(make, seed: int, deadline: float):
    """The reduction events of the forward of the module `make()` gives, on meta, or None
    (it gave none, the trace failed, or no time is left: then the module is not even made)."""
    if deadline - cpu_clock() <= 0.05:
        return None
    module = make()
    left = deadline - cpu_clock()
    if module is None or left <= 0.05:
        return None
    recorder = Recorder()
    if size_on_meta(module, seed, left, during_forward=recorder) is None:
        return None
    return recorder.events


def attribute(constants: list, retrace, seed: int, budget_s: float = META_FORWARD_S) -> tuple:
    """(found, traced): `found` maps (op, length) and (kind, length) to the constant name that
    changes that length in meta traces with each size constant bumped (module docstring);
    `traced` is the set of (op, length) of the base meta trace. `retrace(overrides)` is the
    reference module executed with those constants changed, or None where it does not load."""
    sizes = [c for c in constants if c["get_inputs"] or c["init"]]
    if retrace is None or not sizes:
        return {}, set()
    warm_up_meta()  # the first meta op imports for seconds: not the problem's time
    deadline = cpu_clock() + budget_s  # CPU time: the same facts however loaded the host
    base = _trace(lambda: retrace({}), seed, deadline)
    if base is None:
        return {}, set()
    found = {}
    for c in sizes:
        bumped = None
        for value in (c["value"] + 1, c["value"] * 2):
            if value != c["value"] and bumped is None and cpu_clock() < deadline:
                bumped = _trace(lambda v=value: retrace({c["name"]: v}), seed, deadline)
        for (op, kind, length), (op2, _, length2) in zip(base, bumped or []):
            if op != op2:
                break  # the trace's structure changed with the constant: positions differ
            if length != length2:
                found.setdefault((op, length), c["name"])
                found.setdefault((kind, length), c["name"])
    return found, {(op, length) for op, _, length in base}


# --- the float32 forwards ------------------------------------------------------------------

def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.is_floating_point():
        return t.view(_INT_OF_WIDTH[t.element_size()])
    return t


def bitwise_equal(a: list, b: list) -> bool:
    """Same count, shapes, dtypes and bits (NaN payloads included)."""
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(_bits(x), _bits(y))
        for x, y in zip(a, b))


def trial_seeds() -> list:
    """KernelBench's trial seeds: torch.manual_seed(42), then five
    int(torch.randint(0, 2**32 - 1, (1,)).item()), from a generator of its own."""
    g = torch.Generator().manual_seed(42)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=g).item()) for _ in range(5)]


REPEAT_OFFSETS = (16, 48)
_ALIGN = 256


def shifted(args: list, offset: int) -> list:
    """Copies of the contiguous tensors of `args` whose data starts `offset` bytes past a
    256-byte boundary (other arguments, and tensors with other layouts, as they are)."""
    out = []
    for a in args:
        if not isinstance(a, torch.Tensor) or not a.is_contiguous() or a.numel() == 0:
            out.append(a)
            continue
        nbytes = a.numel() * a.element_size()
        raw = torch.empty(nbytes + offset + _ALIGN, dtype=torch.uint8, device=a.device)
        start = (-raw.data_ptr()) % _ALIGN + offset
        copy = raw[start:start + nbytes].view(a.dtype).view(a.shape)
        copy.copy_(a)
        out.append(copy)
    return out


def forward_facts(forward, args: list) -> tuple:
    """(outputs, the Recorder of the first run, repeatable) from `forward(args)`, one seeded
    float32 forward returning its flattened outputs: on `args`, then on copies of them at each
    of REPEAT_OFFSETS."""
    recorder = Recorder()
    with recorder:
        outs = forward(args)
    repeatable = all(bitwise_equal(outs, forward(shifted(args, k))) for k in REPEAT_OFFSETS)
    return outs, recorder, repeatable


def problem_facts(forward, args: list, code: str | None, constants: dict, retrace,
                  seed: int) -> tuple:
    """(outputs of the load's float32 forward, problem.facts); forward(args) -> outputs."""
    outs, recorder, repeatable = forward_facts(forward, args)
    consts = constant_facts(code, constants)
    names, traced = attribute(consts, retrace, seed) if recorder.events else ({}, set())
    reductions_out, seen = [], set()
    for op, kind, length in recorder.events:
        if (op, length) not in seen:
            seen.add((op, length))
            # by (kind, length) only for an op the meta trace did not run (another kernel)
            key = (op, length) if (op, length) in traced else (kind, length)
            constant = names.get(key, "")
            reductions_out.append({"op": op, "kind": kind, "length": length,
                                   "constant": constant})
    return outs, {"constants": consts, "reductions": reductions_out,
                  "minmax": recorder.minmax, "stochastic": recorder.stochastic,
                  "repeatable": repeatable, "ops": sorted(recorder.ops),
                  "trial_seeds": trial_seeds()}
