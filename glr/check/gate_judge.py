"""kcv's gate judges for gates_vs_fla.py: CMP-01, EXC-01 and ORD-02 through kcv._core.judge (the
C++ judges of src/gates, on synthetic CallRecords holding our kernels' outputs), or, only where
kcv._core cannot be imported, a small Python mirror of the same three rules so a run still
produces figures; the report names the judge that was used.

Outputs travel as kcv's bindings want them: bf16 as uint16 bit patterns, fp32 as float32; the
oracle entries carry the fp64 value and tau (error_model.py) of every element.
"""

import numpy as np
import torch

try:
    from kcv import _core
    CORE_ERROR = None
except Exception as e:  # noqa: BLE001 - any import failure means: use the mirror
    _core = None
    CORE_ERROR = f"{type(e).__name__}: {e}"

DTYPES = {torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
          torch.float16: "f16"}


def judge_name():
    return ("kcv._core.judge (C++ gate judges)" if _core is not None else
            f"Python mirror of the judges (kcv._core not importable: {CORE_ERROR})")


def to_array(t):
    """A torch tensor as the numpy array kcv's bindings take (bf16 -> uint16 bits)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()


def oracle_entry(dtype, ref, tau):
    """dtype: "bf16" | "f32"; ref, tau: float64 tensors of the output's shape."""
    return {"dtype": dtype, "shape": tuple(ref.shape), "value": ref.double().cpu().numpy(),
            "tau": tau.double().cpu().numpy(), "declared": None}


def _values(a, dtype):
    """float64 values of an output array (bf16 bits decoded)."""
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def _half_ulp(dtype, y):
    bits = {"bf16": 8, "f32": 24, "f64": 53, "f16": 11}[dtype]
    tiny = {"bf16": 2.0 ** -126, "f32": 2.0 ** -126, "f64": 2.0 ** -1022, "f16": 2.0 ** -14}[dtype]
    e = np.floor(np.log2(np.maximum(np.abs(y), tiny)))
    return 0.5 * np.exp2(e - (bits - 1))


def _mirror(gate, calls, oracle, label):
    """The three judges' rules in numpy (kcv._core unavailable)."""
    res = {"gate": gate, "verdict": "pass", "summary": "", "worst_ratio": 0.0, "output": 0,
           "worst_index": -1, "violations": 0, "probe_label": label}
    if gate == "ORD-02":
        for k, call in enumerate(calls[1:], 1):
            for o, (a, b) in enumerate(zip(calls[0], call)):
                bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
                diff = np.flatnonzero(a.ravel().view(bits) != b.ravel().view(bits))
                if diff.size:
                    res.update(verdict="fail", output=o, worst_index=int(diff[0]),
                               violations=int(diff.size), worst_ratio=float("inf"),
                               summary=f"call {k} differs from call 0 in output {o} at "
                                       f"{int(diff[0])} ({diff.size} elements)")
                    return res
        res["summary"] = f"{len(calls)} calls bitwise identical"
        return res
    worst, viol, judged = 0.0, 0, 0
    for k, call in enumerate(calls):
        for o, (a, ent) in enumerate(zip(call, oracle)):
            x = _values(a, ent["dtype"]).ravel()
            y = ent["value"].ravel()
            tau = ent["tau"].ravel()
            if gate == "EXC-01":
                cls = lambda z: np.where(np.isnan(z), 1, np.where(np.isinf(z), 2 + (z < 0), 0))  # noqa
                bad = np.flatnonzero(cls(x) != cls(y))
                if bad.size:
                    res.update(verdict="fail", output=o, worst_index=int(bad[0]),
                               violations=int(bad.size), worst_ratio=float("inf"),
                               summary=f"call {k}: output {o} element {int(bad[0])} is {x[bad[0]]} "
                                       f"where the oracle is {y[bad[0]]}; {bad.size} differ in "
                                       "class")
                    return res
            fin = np.isfinite(y)
            eff = np.maximum(tau, _half_ulp(ent["dtype"], y))
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.where(np.isfinite(x), np.abs(x - y) / eff, np.inf)[fin]
            judged += r.size
            viol += int((r > 1).sum())
            if r.size and r.max() > worst:
                worst = float(r.max())
                res.update(output=o, worst_index=int(np.flatnonzero(fin)[int(r.argmax())]))
    res.update(worst_ratio=worst, violations=viol, verdict="pass" if viol == 0 else "fail",
               summary=f"{viol} of {judged} elements over the bound; worst ratio {worst:.3g}")
    return res


def judge(gate, calls, oracle, inputs, label=""):
    """calls: a list (one per call) of lists of output arrays (to_array), in oracle order;
    oracle: oracle_entry dicts; inputs: [(name, array)] of the kernel's inputs. Returns the
    judge's dict (verdict, summary, worst_ratio, output, worst_index, violations, ...)."""
    if _core is None:
        return _mirror(gate, calls, oracle, label)
    records = [_core.CallRecord(status="ok", outputs=list(c)) for c in calls]
    return _core.judge(gate, calls=records, oracle=oracle, inputs=inputs,
                       contract_json='{"deterministic": true}', op_class="scan", label=label,
                       repetitions=len(calls), op_name="glr")
