"""Gate verdict records: calling the C++ judges and folding probes into one verdict per gate.

A gate's verdict over several probes follows the C++ combine rule (gate.hpp combine_results):
fail beats error beats pass beats not_applicable, and the evidence is the worst probe's (the
first failing probe, else the largest error/tau ratio). Records are dicts with the fields of
kcv::audit::VerdictRecord, ready for Store.record; evidence is JSON with non-finite numbers as
strings, since the store checks json_valid."""

from __future__ import annotations

import json
import math

RANK = {"fail": 3, "error": 2, "pass": 1, "not_applicable": 0}


def _num(x):
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f if math.isfinite(f) else repr(f)


def record(gate: str, profile: str, verdict: str, reason: str = "", *, summary: str = "",
           worst_ratio=None, bits_lost=None, probe: str = "", evidence: dict | None = None) -> dict:
    ev = {"summary": summary or reason, "probe": probe}
    for k, v in (evidence or {}).items():
        ev[k] = [_num(q) for q in v] if isinstance(v, (list, tuple)) else (
            v if isinstance(v, (str, bool, int)) or v is None else _num(v))
    wr = _num(worst_ratio)
    bl = _num(bits_lost)
    return {
        "gate": gate,
        "profile": profile,
        "verdict": verdict,
        "reason": reason,
        "worst_ratio": wr if isinstance(wr, float) else None,
        "bits_lost": bl if isinstance(bl, float) else None,
        "evidence_json": json.dumps(ev, sort_keys=True),
        "probe_token": probe if verdict == "fail" else "",
    }


def not_applicable(gate: str, profile: str, reason: str) -> dict:
    return record(gate, profile, "not_applicable", reason)


def from_judge(gate: str, profile: str, result: dict, probe: str) -> dict:
    """A kcv._core.judge result dict as a verdict record of one probe."""
    evidence = {k: result.get(k) for k in ("worst_index", "candidate_value", "oracle_value",
                                          "ratio_quantiles", "violations") if k in result}
    return record(gate, profile, result.get("verdict", "error"), result.get("reason", "") or "",
                  summary=result.get("summary", "") or "", worst_ratio=result.get("worst_ratio"),
                  bits_lost=result.get("bits_lost"), probe=probe, evidence=evidence)


def _ratio(r: dict) -> float:
    w = r.get("worst_ratio")
    return -1.0 if w is None else w


def combine(records: list[dict]) -> dict:
    """One record for a gate from its probes' records (same gate and profile)."""
    if not records:
        raise ValueError("combine: no records")
    best = max(records, key=lambda r: (RANK.get(r["verdict"], 2), _ratio(r)))
    ratios = [r["worst_ratio"] for r in records if r["worst_ratio"] is not None]
    out = dict(best)
    if ratios and best["verdict"] != "fail":
        out["worst_ratio"] = max(ratios)
    ev = json.loads(out["evidence_json"])
    ev["probes"] = len(records)
    out["evidence_json"] = json.dumps(ev, sort_keys=True)
    return out
