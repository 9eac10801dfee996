"""pytest helper: kcv.testing.assert_contracts(candidate, reference, inputs, ...) runs
kcv.verify (the pipeline the audit uses) and raises AssertionError listing every failing gate
with its finding and evidence (and the kernel status when the candidate raised, crashed, hung
or did not load)."""

from __future__ import annotations

from kcv.verify import verify


def assert_contracts(candidate, reference, inputs, contract=None, **kwargs):
    """Passes silently when every applicable gate passes; returns the report."""
    report = verify(candidate, reference, inputs, contract, **kwargs)
    if report.passed:
        return report
    lines = [f"kcv contracts violated by {getattr(candidate, '__name__', type(candidate).__name__)}"]
    if report.status != "ok":
        lines.append(f"  status {report.status}: {report.message}")
    for g in report.failures:
        ev = g.evidence
        where = ""
        if ev.get("worst_index") is not None and ev.get("worst_index") != -1:
            where = (f" (element {ev['worst_index']}: candidate {ev.get('candidate_value')}, "
                     f"oracle {ev.get('oracle_value')})")
        ratio = "" if g.worst_ratio is None else f", error/bound {g.worst_ratio:.3g}"
        lines.append(f"  {g.gate} [{g.profile}] {g.finding}: {g.reason or ev.get('summary', '')}{ratio}"
                     f"{where} probe {ev.get('probe', '')}")
    raise AssertionError("\n".join(lines))
