"""Builds sample.jsonl from problems/*/ (our own tiny KernelBench-style problems, written for kcv;
no third-party code). Rows follow the corpus schema of ../shared/corpora/README.md, keys in its
order; the last line is deliberately malformed (level is a string). Run from anywhere:
    python examples/kernelbench/make_sample.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (directory, problem_id, problem_name, language, original_verdict)
ROWS = [
    ("p1_linear_gelu", 1, "1_Linear_GELU", "torch", "accepted"),
    ("p2_row_centering", 2, "2_Row_centering", "torch", "accepted"),
    ("p3_relu_double", 3, "3_ReLU_times_two", "torch", "accepted"),
    ("p4_silu", 4, "4_SiLU", "torch", "accepted"),
    ("p5_scaled_add", 5, "5_Scaled_add", "triton", "accepted"),
    ("p6_affine_map", 6, "6_Affine_map", "torch", "accepted"),
    ("p7_tanh", 7, "7_Tanh", "torch", "compile_error"),
]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def row(directory, pid, name, language, verdict):
    d = os.path.join(HERE, "problems", directory)
    cand = next(f for f in ("candidate.py", "candidate.txt") if os.path.exists(os.path.join(d, f)))
    return {
        "id": f"sample/cpu/L1/P{pid}",
        "corpus": "sample",
        "source_repo": "kcv/examples",
        "source_commit": "0" * 40,
        "source_path": f"examples/kernelbench/problems/{directory}/{cand}",
        "level": 1,
        "problem_id": pid,
        "problem_name": name,
        "reference_version": "head",
        "reference_code": read(os.path.join(d, "reference.py")),
        "candidate_code": read(os.path.join(d, cand)),
        "language": language,
        "model": None,
        "original_harness": "hand-written kcv sample; verdict as KernelBench's check would give",
        "original_verdict": verdict,
        "original_speedup": None,
        "original_hardware": None,
    }


def main():
    lines = [json.dumps(row(*r)) for r in ROWS]
    bad = row(*ROWS[-1])
    bad["id"] = "sample/cpu/L1/P8"
    bad["problem_id"] = 8
    bad["problem_name"] = "8_Malformed_level"
    bad["level"] = "one"
    lines.append(json.dumps(bad))
    with open(os.path.join(HERE, "sample.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
