"""kcv.verify: the gate battery for a plain torch callable against the user's own reference.

    report = kcv.verify(my_kernel, reference_fn, [x, w], contract={"profile": "strict"})
    print(report)            # one line per gate: verdict, worst error/bound ratio, evidence
    assert report.passed

The reference is the caller's own code, hence trusted: it runs here, in this process, in
float64 (the oracle value) and at the inputs' own dtypes (eager's own error, the error model of
docs/08_audit.md). The candidate never runs here: it is pickled (by reference, so its module
must be importable; cloudpickle is used for lambdas and closures when installed) and runs in a
`python -m kcv.worker` process through kcv._core.Worker, which owns the buffers and audits them
(guard bands, sentinels, input mutation, timeouts, crashes). The probes and judges are the
audit's (kcv.audit.battery), minus the rescaled shape: a callable has no module constants."""

from __future__ import annotations

import base64
import os
import pickle
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from kcv.audit import battery as battery_mod
from kcv.audit.session import Limits, Problem, worker_command, run_call

TORCH_DTYPE_NAMES = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
                     "int32": "i32", "int64": "i64", "bool": "bool"}


def _dtype_name(t) -> str:
    name = str(t.dtype).replace("torch.", "")
    if name not in TORCH_DTYPE_NAMES:
        raise TypeError(f"inputs: dtype {t.dtype} is not supported ({', '.join(TORCH_DTYPE_NAMES)})")
    return TORCH_DTYPE_NAMES[name]


def _to_numpy(t) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()


def _to_torch(a: np.ndarray, dtype: str, device):
    import torch

    a = np.ascontiguousarray(a)
    if dtype == "bf16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(a.copy()).to(device)


def _flatten(result) -> list:
    import torch

    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(r, torch.Tensor) for r in result):
        return list(result)
    raise TypeError(f"reference: returned {type(result).__name__}, expected a tensor or a tuple of tensors")


def _payload(fn) -> str:
    try:
        data = pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        try:
            import cloudpickle  # noqa: PLC0415
        except ImportError:
            raise TypeError(f"candidate: cannot be pickled ({e}); define it at module level, "
                            "or install cloudpickle for lambdas and closures") from None
        data = cloudpickle.dumps(fn)
    return base64.b64encode(data).decode("ascii")


def _worker_env():
    """The worker is `python -m kcv.worker`: make sure it finds this kcv."""
    import kcv

    dirs = [os.path.dirname(p) for p in kcv.__path__]
    have = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    missing = [d for d in dirs if d not in have]
    if missing:
        os.environ["PYTHONPATH"] = os.pathsep.join(missing + [p for p in have if p])


class CallableSession:
    """The interface Battery uses (see kcv.audit.session.ProblemSession) over an in-process
    trusted reference and a candidate worker of load kind "pickle"."""

    def __init__(self, reference, inputs, limits: Limits, device: str):
        self.reference_fn = reference
        self.limits = limits
        self.device = device
        self.on_cpu = device == "cpu"
        self.label = "given inputs"
        self.specs = [_dtype_name(t) for t in inputs]
        self.given = [(f"input.{k}", _to_numpy(t)) for k, t in enumerate(inputs)]
        outs = self._run(self.given, wide=False, raw=True)
        self.problem = Problem(
            inputs=[{"kind": "tensor", "dtype": d, "shape": list(a.shape)}
                    for d, (_, a) in zip(self.specs, self.given)],
            outputs=[{"dtype": _dtype_name(o), "shape": list(o.shape)} for o in outs])
        self.candidate = None

    def _run(self, inputs, wide: bool, raw: bool = False):
        import torch

        dev = "cuda" if self.device == "cuda" else "cpu"
        args = []
        for d, (_, a) in zip(self.specs, inputs):
            t = _to_torch(a, d, dev)
            args.append(t.double() if wide and t.is_floating_point() else t)
        with torch.no_grad():
            outs = _flatten(self.reference_fn(*args))
        if raw:
            return outs
        return [o.detach().double().cpu().numpy() if o.is_floating_point() else
                o.detach().cpu().numpy().astype(np.float64) for o in outs]

    def start_candidate(self, candidate):
        from kcv import _core

        _worker_env()
        mod = sys.modules.get(getattr(candidate, "__module__", "") or "")
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        if mod is not None and getattr(mod, "__file__", None):
            paths.insert(0, os.path.dirname(os.path.abspath(mod.__file__)))
        load = {"kind": "pickle", "payload": _payload(candidate), "sys_path": paths,
                "device": self.device, "kernel": "candidate", "op": "callable"}
        self.candidate = _core.Worker(worker_command(), load, name="candidate", op="callable",
                                      memory_limit_bytes=self.limits.memory_limit_bytes,
                                      startup_timeout_ms=self.limits.budget_ms(self.limits.remaining_s()))
        self.candidate.start()

    def inputs(self, seed):
        return self.given

    def reference64(self, inputs, key=None):
        return self._run(inputs, wide=True)

    def reference32(self, inputs, key=None, tf32=(0, 0)):
        return self._run(inputs, wide=False)

    def forget(self, seed):
        """Nothing memoised here: the inputs are the caller's."""

    def output_specs(self):
        return [(o["dtype"], tuple(o["shape"])) for o in self.problem.outputs]

    def run_candidate(self, inputs, **opts):
        return run_call(self.candidate, inputs, self.output_specs(), mode=0,
                        timeout_ms=self.limits.budget_ms(self.limits.call_timeout_s), **opts)

    def close(self):
        if self.candidate is not None:
            self.candidate.close()
            self.candidate = None


@dataclass
class GateReport:
    gate: str
    profile: str
    verdict: str
    reason: str
    worst_ratio: float | None
    evidence: dict = field(default_factory=dict)


@dataclass
class VerifyReport:
    gates: list
    status: str = "ok"  # the kernel status: ok, crash, timeout, import_error, error
    message: str = ""

    @property
    def failures(self) -> list:
        return [g for g in self.gates if g.verdict == "fail"]

    @property
    def passed(self) -> bool:
        return self.status == "ok" and not self.failures

    def __str__(self) -> str:
        lines = [f"kcv.verify: {'PASS' if self.passed else 'FAIL'} (status {self.status})"
                 + (f": {self.message}" if self.message else "")]
        for g in self.gates:
            ratio = "" if g.worst_ratio is None else f"{g.worst_ratio:9.3g}"
            detail = g.reason or g.evidence.get("summary", "")
            lines.append(f"  {g.gate:<7} {g.profile:<14} {g.verdict:<15} {ratio:>9}  {detail}")
        return "\n".join(lines)


def verify(candidate, reference, inputs, contract=None, *, profiles=None, device=None,
           call_timeout_s: float = 60.0, timeout_s: float = 600.0,
           memory_limit_bytes: int = 0) -> VerifyReport:
    """Runs the gate battery on `candidate(*inputs)` against `reference(*inputs)`.

    contract: a dict (or JSON text) of docs/01's contract fields; its "profile" (default
    strict) is the profile judged unless `profiles` lists several. device: where the candidate
    runs, "cpu" or "cuda" (default: the inputs' device)."""
    import json

    if isinstance(contract, str):
        contract = json.loads(contract)
    contract = dict(contract or {})
    profs = list(profiles or [contract.get("profile", "strict")])
    contract.pop("profile", None)
    inputs = list(inputs)
    if device is None:
        device = "cuda" if any(getattr(t, "is_cuda", False) for t in inputs) else "cpu"
    limits = Limits(deadline=time.monotonic() + timeout_s, call_timeout_s=call_timeout_s,
                    memory_limit_bytes=memory_limit_bytes)
    session = CallableSession(reference, inputs, limits, device)
    row = {"id": "verify", "reference_code": "", "problem_name": getattr(reference, "__name__", ""),
           "level": 1}
    bat = battery_mod.Battery(session, row, profs, seeds=(0,), contract=contract)
    status, message = "ok", ""
    try:
        session.start_candidate(candidate)
        bat.run()
        status = bat.kernel_status
        message = "; ".join(bat.status_messages)
    except battery_mod.StopBattery as e:
        status, message = e.status, e.message
    except RuntimeError as e:
        from kcv.audit.statuses import status_of_load_error

        status, message = status_of_load_error(str(e)), str(e)
    finally:
        session.close()
    gates = []
    for r in bat.records:
        gates.append(GateReport(r["gate"], r["profile"], r["verdict"], r["reason"],
                                r["worst_ratio"], json.loads(r["evidence_json"])))
    return VerifyReport(gates, status, message)
