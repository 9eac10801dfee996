"""Load kind "pickle" (docs/06_worker_protocol.md §7.5): a plain Python callable, for kcv.verify
on callables, in either role.

Fields: "payload" (base64 of a pickled callable; cloudpickle payloads load too when cloudpickle
is installed), "sys_path" (directories put in front of sys.path first, so the callable's module
imports), optionally "role" ("candidate", the default, as kcv.verify's candidate loads have
always been, or "reference"), "device" ("cpu", the default, "cuda" or "auto"), "seed" (integer,
default 0: the seed of the reference load's float32 forwards), "pass_params" (candidate: true
passes the call's params as keyword arguments; without it a call's params must be empty),
"name" (or "kernel") and "op" (echoed as the loaded name and op). The reference role also needs
"inputs": base64 of a pickled list of tensors (and scalars, reused by every call as a
KernelBench template reuses get_inputs' scalars).

The reference serves draw (the given inputs, whatever the seed), reference64 (floating inputs
converted to float64 with their layout; an nn.Module callable is copied and widened like a
KernelBench Model, a plain function gets float64 tensors and float64_forward), reference32 and
forget; its load reply's problem is {inputs, outputs, constants: {}, facts} computed as for
kernelbench (no module constants, so every reduction's constant is ""). The candidate serves
run and describe; the Triton objects and autotuners are those of the callable's module
globals (a function's __globals__, else its class's module).

This file checks the request and unpickles without importing torch first (TRITON_INTERPRET
must be set before the payload's imports can load Triton); kcv.worker.pickled_sides holds the
torch side.
"""

import base64
import binascii
import os
import pickle
import sys

from kcv.worker.errors import LoadError, load_error

ROLES = ("reference", "candidate")


def _unpickle(req: dict, key: str, what: str):
    data = req.get(key)
    if not isinstance(data, str):
        raise LoadError(f"bad_request: {key}: missing or not a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise LoadError(f"bad_request: {key}: not base64 ({e})") from None
    try:
        return pickle.loads(raw)  # noqa: S301 (runs in the worker only)
    except BaseException as e:  # noqa: BLE001
        raise load_error(e, "import_error", what) from None


def _fields(req: dict) -> dict:
    paths = req.get("sys_path") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise LoadError("bad_request: sys_path: not a list of strings")
    role = req.get("role", "candidate")
    if role not in ROLES:
        raise LoadError(f"bad_request: role: {role!r} is not one of {list(ROLES)}")
    device = req.get("device", "cpu")
    if device not in ("auto", "cuda", "cpu"):
        raise LoadError(f"bad_request: device: {device!r} is not one of ['auto', 'cuda', 'cpu']")
    seed = req.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise LoadError(f"bad_request: seed: {seed!r} is not a non-negative integer")
    if not isinstance(req.get("pass_params", False), bool):
        raise LoadError("bad_request: pass_params: not a boolean")
    if req.get("pass_params") and role != "candidate":
        raise LoadError("bad_request: pass_params: only the candidate role passes params")
    return {"paths": paths, "role": role, "device": device, "seed": seed,
            "pass_params": bool(req.get("pass_params", False))}


def _namespace(fn) -> dict:
    """The globals of the callable's module (where its Triton kernels live)."""
    g = getattr(fn, "__globals__", None)
    if isinstance(g, dict):
        return g
    name = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None) or ""
    module = sys.modules.get(name)
    return vars(module) if module is not None else {}


def load(req: dict):
    f = _fields(req)
    if f["device"] == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before the payload imports Triton
    sys.path[:0] = [p for p in f["paths"] if p not in sys.path]
    fn = _unpickle(req, "payload", "payload")
    if not callable(fn):
        raise LoadError(f"import_error: payload: the unpickled {type(fn).__name__} is not callable")
    import torch  # noqa: PLC0415

    if f["device"] == "cuda" and not torch.cuda.is_available():
        raise LoadError("bad_request: device: 'cuda' requested but no CUDA device is available")
    use_cuda = f["device"] != "cpu" and torch.cuda.is_available()
    if not use_cuda:
        os.environ["TRITON_INTERPRET"] = "1"
    device = "cuda" if use_cuda else "cpu"
    inputs = None
    if f["role"] == "reference":
        inputs = _unpickle(req, "inputs", "inputs")
        if not isinstance(inputs, (list, tuple)):
            raise LoadError(f"bad_request: inputs: the unpickled {type(inputs).__name__} is not "
                            "a list")
    name = req.get("name") or req.get("kernel") or getattr(fn, "__qualname__", type(fn).__name__)
    from kcv.worker.pickled_sides import PickledCallable  # noqa: PLC0415 (imports torch)

    return PickledCallable(fn, name, req.get("op") or "callable", device, f, inputs,
                           _namespace(fn))
