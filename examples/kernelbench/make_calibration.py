"""Builds calibration.jsonl from calibration/*/ (hand-written KernelBench-style cases for kcv:
planted defects, one gate each, and correct kernels; no third-party code). Rows follow the
corpus schema of ../shared/corpora/README.md, keys in its order, plus two extra keys: "contract"
(the case's contract object; omitted when empty) and "expect" (the case's expected verdicts,
profile -> gate -> fail | pass | pass_or_na). The case.json schema: calibration/README.md.
Run from anywhere:
    python examples/kernelbench/make_calibration.py
"""

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CAL = os.path.join(HERE, "calibration")
LANGUAGES = ("torch", "triton", "cuda")
CASE_KEYS = {"language", "gate", "defect", "why_replica_accepts", "contract", "expect"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def cases():
    """Case directories in a fixed order (sorted by name: the defects by gate, then ok_*)."""
    return sorted(d for d in os.listdir(CAL) if os.path.isfile(os.path.join(CAL, d, "case.json")))


def row(pid, name):
    d = os.path.join(CAL, name)
    case = json.loads(read(os.path.join(d, "case.json")))
    unknown = set(case) - CASE_KEYS
    if unknown:
        raise SystemExit(f"{name}/case.json: unknown keys {sorted(unknown)}")
    lang = case["language"]
    if lang not in LANGUAGES:
        raise SystemExit(f"{name}/case.json: language {lang!r} not one of {LANGUAGES}")
    out = {
        "id": f"calibration/{'cuda' if lang == 'cuda' else 'cpu'}/L1/P{pid}",
        "corpus": "calibration",
        "source_repo": "kcv/examples",
        "source_commit": "0" * 40,
        "source_path": f"examples/kernelbench/calibration/{name}/candidate.py",
        "level": 1,
        "problem_id": pid,
        "problem_name": f"{pid}_{name}",
        "reference_version": "head",
        "reference_code": read(os.path.join(d, "reference.py")),
        "candidate_code": read(os.path.join(d, "candidate.py")),
        "language": lang,
        "model": None,
        "original_harness": "hand-written kcv calibration case; built to pass KernelBench's check",
        "original_verdict": "accepted",
        "original_speedup": None,
        "original_hardware": None,
    }
    if case.get("contract"):
        out["contract"] = case["contract"]
    out["expect"] = case["expect"]
    return out


def main():
    parser = argparse.ArgumentParser(description="Builds calibration.jsonl from calibration/*/.")
    parser.add_argument("--out", default=os.path.join(HERE, "calibration.jsonl"))
    out = parser.parse_args().out
    lines = [json.dumps(row(pid, name)) for pid, name in enumerate(cases(), start=1)]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} rows to {out}")


if __name__ == "__main__":
    main()
