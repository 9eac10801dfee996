"""Load kind "pickle": a plain Python callable, for kcv.verify on callables.

Fields: "payload" (base64 of a pickled callable; cloudpickle payloads load too when cloudpickle
is installed), "sys_path" (directories put in front of sys.path first, so the callable's module
imports), optionally "device" ("cpu", the default, "cuda" or "auto"), "pass_params" (true: the
call's params other than "mode" are passed as keyword arguments), "name" (or "kernel") and "op"
(echoed as the loaded name and op). A call is mode 0 only: fn(*inputs) returns a tensor or a
tuple of tensors that must match the outputs the caller declared exactly (dtype and shape).
"""

import base64
import binascii
import os
import pickle
import sys

from kcv.worker.errors import LoadError, RequestError, load_error


def load(req: dict):
    payload = req.get("payload")
    if not isinstance(payload, str):
        raise LoadError("bad_request: payload: missing or not a base64 string")
    paths = req.get("sys_path") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise LoadError("bad_request: sys_path: not a list of strings")
    device = req.get("device", "cpu")
    if device not in ("auto", "cuda", "cpu"):
        raise LoadError(f"bad_request: device: {device!r} is not one of ['auto', 'cuda', 'cpu']")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as e:
        raise LoadError(f"bad_request: payload: not base64 ({e})") from None
    sys.path[:0] = [p for p in paths if p not in sys.path]
    try:
        fn = pickle.loads(data)  # noqa: S301 (runs in the worker only)
    except BaseException as e:  # noqa: BLE001
        raise load_error(e, "import_error", "payload") from None
    if not callable(fn):
        raise LoadError(f"import_error: payload: the unpickled {type(fn).__name__} is not callable")
    import torch  # noqa: PLC0415

    if device == "cuda" and not torch.cuda.is_available():
        raise LoadError("bad_request: device: 'cuda' requested but no CUDA device is available")
    use_cuda = device != "cpu" and torch.cuda.is_available()
    if not use_cuda:
        os.environ["TRITON_INTERPRET"] = "1"
    name = req.get("name") or req.get("kernel") or getattr(fn, "__qualname__", type(fn).__name__)
    return PickledCallable(fn, name, req.get("op") or "callable", "cuda" if use_cuda else "cpu",
                           bool(req.get("pass_params", False)))


class PickledCallable:
    def __init__(self, fn, name: str, op: str, device: str, pass_params: bool):
        self.fn, self.name, self.op, self.device = fn, name, op, device
        self.pass_params = pass_params

    def loaded_fields(self) -> dict:
        return {"device": self.device}

    def call(self, mode: int, inputs: list, outputs: list, params: dict) -> None:
        import torch  # noqa: PLC0415

        from kcv.worker.devices import copy_back, to_device  # noqa: PLC0415
        from kcv.worker.outputs import store  # noqa: PLC0415

        if mode != 0:
            raise RequestError(f"params.mode: {mode}: a pickled callable serves mode 0 only")
        kwargs = {k: v for k, v in params.items() if k != "mode"} if self.pass_params else {}
        moved = [to_device(t, self.device) for t in inputs]
        result = self.fn(*moved, **kwargs)
        if self.device == "cuda":
            torch.cuda.synchronize()
        store(result, outputs, convert=False)
        for view, m in zip(inputs, moved):
            copy_back(view, m)
