"""kcv.verify: every gate for a plain torch callable against the user's own reference.

    report = kcv.verify(my_kernel, reference_fn, [x, w], contract={"profile": "strict"})
    print(report)            # one line per gate and profile: verdict, worst error/bound, evidence
    assert report.passed

The same pipeline as the audit judges it (kcv._core.verify_module, src/kernelbench): the
reference, the candidate and the inputs are pickled (by reference, so their modules must be
importable; cloudpickle is used for lambdas and closures when installed) into two
`python -m kcv.worker` processes of load kind "pickle" (docs/06 §7.5). The reference worker
serves the inputs and runs the reference in float64 and at its own precision (the oracle and its
bound); the candidate worker runs the candidate; the buffer audit, the probes, the judges,
folding and shrinking are kcv's. A callable has no module constants, so no other shape is
probed: the inputs' own shape is the only one.

The workers are forked from warm parents (kcv.audit.forkservers, one per role), started by the
first call and kept for the process's life, so a test session that verifies many kernels pays
for importing torch once rather than twice per call; `warm_workers=False` starts them cold."""

from __future__ import annotations

import atexit
import base64
import json
import os
import pickle
import sys
import threading
from dataclasses import dataclass, field

from kcv.audit.workers import worker_command

PROFILES = ("strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager")


def _payload(obj, what: str) -> str:
    try:
        data = pickle.dumps(obj)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        try:
            import cloudpickle  # noqa: PLC0415
        except ImportError:
            raise TypeError(f"{what}: cannot be pickled ({e}); define it at module level, "
                            "or install cloudpickle for lambdas and closures") from None
        data = cloudpickle.dumps(obj)
    return base64.b64encode(data).decode("ascii")


def _worker_env():
    """The worker is `python -m kcv.worker`: make sure it finds this kcv."""
    import kcv

    dirs = [os.path.dirname(p) for p in kcv.__path__]
    have = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    missing = [d for d in dirs if d not in have]
    if missing:
        os.environ["PYTHONPATH"] = os.pathsep.join(missing + [p for p in have if p])


_servers = None  # kcv.audit.forkservers.ForkServers of this process, started on first use
_servers_lock = threading.Lock()
_SERVERS_READY_S = 120.0  # a parent not ready by then: that role's workers start cold


def _close_servers() -> None:
    global _servers
    with _servers_lock:
        if _servers is not None:
            _servers.close()
            _servers = None


atexit.register(_close_servers)


def _warm_commands() -> tuple[list[str], list[str]]:
    """argv of the (reference, candidate) workers, forked from this process's warm parents. A
    parent that has died (it ends with the thread that started it) is replaced."""
    global _servers
    from kcv.audit.forkservers import ForkServers  # noqa: PLC0415

    with _servers_lock:
        if _servers is not None and not _servers.running():
            _servers.close()
            _servers = None
        if _servers is None:
            _servers = ForkServers([None], threads=None)
            _servers.wait_ready(_SERVERS_READY_S)
        return _servers.command("reference", None), _servers.command("candidate", None)


def _sys_path(*fns) -> list[str]:
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    for fn in fns:
        mod = sys.modules.get(getattr(fn, "__module__", "") or "")
        if mod is not None and getattr(mod, "__file__", None):
            paths.insert(0, os.path.dirname(os.path.abspath(mod.__file__)))
    return paths


@dataclass
class GateReport:
    gate: str
    profile: str
    verdict: str
    reason: str
    worst_ratio: float | None
    finding: str = "none"
    evidence: dict = field(default_factory=dict)


@dataclass
class VerifyReport:
    gates: list
    status: str = "ok"  # the kernel status: ok, runtime_error, bad_output, crash, timeout, ...
    message: str = ""
    replica: str | None = None  # KernelBench's own check on the given inputs: accepted | rejected

    @property
    def failures(self) -> list:
        return [g for g in self.gates if g.verdict == "fail"]

    @property
    def passed(self) -> bool:
        return self.status == "ok" and not self.failures and not any(
            g.verdict == "error" for g in self.gates)

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
           memory_limit_bytes: int = 0, warm_workers: bool = True) -> VerifyReport:
    """Runs every gate on `candidate(*inputs)` against `reference(*inputs)`.

    contract: a dict (or JSON text) with the optional fields "profile" (default strict),
    "deterministic" (default true) and "accumulator" ("f16"/"bf16" when declared); the
    contract's profile is judged unless `profiles` lists others. device: where both run, "cpu"
    or "cuda" (default: the inputs' device). warm_workers: fork the workers from this process's
    warm parents (False: start each cold)."""
    from kcv import _core

    if isinstance(contract, str):
        contract = json.loads(contract)
    contract = dict(contract or {})
    profs = list(profiles or [contract.get("profile", "strict")])
    bad = [p for p in profs if p not in PROFILES]
    if bad:
        raise ValueError(f"profiles: unknown profile {', '.join(bad)}; known: {', '.join(PROFILES)}")
    if device is None:
        device = "cuda" if any(t.device.type == "cuda" for t in inputs) else "cpu"
    inputs = [t.detach().cpu() for t in inputs]
    _worker_env()
    reference_command, candidate_command = (_warm_commands() if warm_workers else
                                            (worker_command(), worker_command()))
    paths = _sys_path(candidate, reference)
    common = {"kind": "pickle", "sys_path": paths, "device": device}
    row = {"id": getattr(candidate, "__name__", "candidate"),
           "reference_load": {**common, "payload": _payload(reference, "reference"),
                              "inputs": _payload(inputs, "inputs")},
           "candidate_load": {**common, "payload": _payload(candidate, "candidate")},
           "contract": contract}
    outcome = _core.verify_module(row, worker_command=candidate_command,
                                  reference_worker_command=reference_command, device=device,
                                  memory_limit_bytes=memory_limit_bytes,
                                  load_timeout_s=timeout_s, call_timeout_s=call_timeout_s,
                                  kernel_timeout_s=timeout_s, profiles=profs)
    gates = [GateReport(v["gate"], v["profile"], v["verdict"], v["reason"], v["worst_ratio"],
                        v.get("finding", "none"), json.loads(v["evidence_json"]))
             for v in outcome["verdicts"]]
    return VerifyReport(gates, outcome["status"], outcome["message"], outcome["replica_verdict"])
