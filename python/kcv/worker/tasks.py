"""The typed tasks of a kernelbench or pickle call (docs/06_worker_protocol.md §7.3), checked.

A call request carries `"task": {"kind": K, ...}`; parse() turns it into a Task whose fields
are all present (defaults filled in) and of the right type, or raises RequestError naming the
field ("task.seed: expected an integer, got 1.5"), so kcv gets an error reply for a request it
should not have sent. The checks are strict on purpose: integers must be JSON integers (not 1.0,
not true), flags JSON booleans, strings one of their listed values, and an unknown kind or field
is refused rather than ignored (a misspelt "subnormal" must not silently run the default).

Defaults, for fields a request may leave out: keep false; nan "propagate", subnormals "keep";
cudnn_tf32 and matmul_tf32 false, autocast "none"; concurrency 1, autotune_config -1,
device_guard 0, guard_seed 0, fresh_inputs false, device_offset 0. inputs_seed, inputs_key, poison and shuffle_seed are optional (absent or null:
none). seed is required wherever a kind has it. The old numeric params["mode"] is refused
(check_params).
"""

from dataclasses import dataclass, field

from kcv.worker.errors import RequestError

REFERENCE_KINDS = ("draw", "forget", "stage", "reference64", "reference32")
CANDIDATE_KINDS = ("run", "describe")
NAN = ("propagate", "number")
SUBNORMALS = ("keep", "flush")
AUTOCAST = ("none", "f16", "bf16")
POISON_BITS = {"f32": 32, "f64": 64, "f16": 16, "bf16": 16, "i32": 32, "i64": 64}
_SEED_LIMIT = 1 << 64  # torch.manual_seed takes up to 2^64 - 1


@dataclass(frozen=True)
class Task:
    """One checked task: `kind` and every field of that kind (see the module docstring)."""
    kind: str
    seed: int = 0
    keep: bool = False
    inputs_seed: int | None = None
    inputs_key: int | None = None
    key: int = 0
    nan: str = "propagate"
    subnormals: str = "keep"
    cudnn_tf32: bool = False
    matmul_tf32: bool = False
    autocast: str = "none"
    concurrency: int = 1
    autotune_config: int = -1
    poison: dict = field(default_factory=dict)  # dtype name -> unsigned bit pattern
    device_guard: int = 0
    guard_seed: int = 0
    shuffle_seed: int | None = None
    fresh_inputs: bool = False
    device_offset: int = 0


def _integer(task: dict, name: str, *, low: int | None = None, high: int | None = None):
    value = task[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestError(f"task.{name}: expected an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value >= high):
        span = f">= {low}" if high is None else f"in [{low}, {high})"
        raise RequestError(f"task.{name}: {value} is not {span}")
    return value


def _flag(task: dict, name: str) -> bool:
    value = task[name]
    if not isinstance(value, bool):
        raise RequestError(f"task.{name}: expected a boolean, got {value!r}")
    return value


def _choice(task: dict, name: str, allowed: tuple) -> str:
    value = task[name]
    if value not in allowed or not isinstance(value, str):
        raise RequestError(f"task.{name}: {value!r} is not one of {list(allowed)}")
    return value


def _poison(task: dict) -> dict:
    value = task["poison"]
    if not isinstance(value, dict):
        raise RequestError(f"task.poison: expected an object of dtype name -> bits, got {value!r}")
    out = {}
    for name, bits in value.items():
        width = POISON_BITS.get(name)
        if width is None:
            raise RequestError(f"task.poison.{name}: not one of {list(POISON_BITS)}")
        if not isinstance(bits, int) or isinstance(bits, bool):
            raise RequestError(f"task.poison.{name}: expected an integer, got {bits!r}")
        if not 0 <= bits < (1 << width):
            raise RequestError(f"task.poison.{name}: {bits} is not an unsigned {width}-bit pattern")
        out[name] = bits
    return out


def _device_offset(task: dict) -> int:
    value = _integer(task, "device_offset", low=0, high=4096)
    if value % 16:
        raise RequestError(f"task.device_offset: {value} is not a multiple of 16 bytes")
    return value


# kind -> {field: checker(task dict) -> value}; a field absent from the request keeps Task's default
_SEED = {"seed": lambda t: _integer(t, "seed", low=0, high=_SEED_LIMIT)}
_INPUTS_SEED = {"inputs_seed": lambda t: _integer(t, "inputs_seed", low=0, high=_SEED_LIMIT),
                "inputs_key": lambda t: _integer(t, "inputs_key", low=0, high=_SEED_LIMIT)}
_FIELDS = {
    "draw": {**_SEED, "keep": lambda t: _flag(t, "keep")},
    "forget": dict(_SEED),
    "stage": {"key": lambda t: _integer(t, "key", low=0, high=_SEED_LIMIT)},
    "reference64": {**_SEED, **_INPUTS_SEED,
                    "nan": lambda t: _choice(t, "nan", NAN),
                    "subnormals": lambda t: _choice(t, "subnormals", SUBNORMALS)},
    "reference32": {**_SEED, **_INPUTS_SEED,
                    "cudnn_tf32": lambda t: _flag(t, "cudnn_tf32"),
                    "matmul_tf32": lambda t: _flag(t, "matmul_tf32"),
                    "autocast": lambda t: _choice(t, "autocast", AUTOCAST)},
    "run": {**_SEED,
            "concurrency": lambda t: _integer(t, "concurrency", low=1),
            "autotune_config": lambda t: _integer(t, "autotune_config", low=-1),
            "poison": _poison,
            "device_guard": lambda t: _integer(t, "device_guard", low=0),
            "guard_seed": lambda t: _integer(t, "guard_seed", low=0, high=_SEED_LIMIT),
            "shuffle_seed": lambda t: _integer(t, "shuffle_seed", low=0, high=_SEED_LIMIT),
            "fresh_inputs": lambda t: _flag(t, "fresh_inputs"),
            "device_offset": _device_offset},
    "describe": {},
}
_REQUIRED = {"seed", "key"}
_NULLABLE = {"inputs_seed", "inputs_key", "poison", "shuffle_seed"}


def parse(task) -> Task:
    """The Task of a call request's "task" value; RequestError naming the field otherwise."""
    if not isinstance(task, dict):
        raise RequestError("task: missing or not a JSON object (a call of a kernelbench or pickle "
                           "load carries a typed task, docs/06_worker_protocol.md §7.3)")
    kind = task.get("kind")
    fields = _FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise RequestError(f"task.kind: {kind!r} is not one of {list(_FIELDS)}")
    unknown = sorted(k for k in task if k != "kind" and k not in fields)
    if unknown:
        raise RequestError(f"task.{unknown[0]}: not a field of a {kind} task (its fields: "
                           f"{', '.join(fields) or 'none'})")
    values = {}
    for name, check in fields.items():
        if name not in task or (task[name] is None and name in _NULLABLE):
            if name in _REQUIRED:
                raise RequestError(f"task.{name}: missing (a {kind} task needs it)")
            continue
        values[name] = check(task)
    return Task(kind=kind, **values)


def check_params(params, *, allow: bool = False) -> dict:
    """The call's params, which a task call leaves empty (or absent). The old numeric "mode" is
    refused with a pointer to the task form; `allow` (a pickle load with pass_params) lets other
    params through as the callable's keyword arguments."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RequestError("params: not a JSON object")
    if "mode" in params:
        raise RequestError("params.mode: numeric modes are gone; a call carries a typed task "
                           "instead (\"task\": {\"kind\": ...}, docs/06_worker_protocol.md §7.3)")
    if params and not allow:
        raise RequestError(f"params: a task call carries no params (got {sorted(params)}); its "
                           "settings are task fields")
    return dict(params)
