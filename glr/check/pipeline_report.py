"""The markdown report of the GLR pipeline step (glr/check/device_run.sh, STEPS=pipeline): reads the
JSON reports that `kcv verify --json` wrote per member (kcv's report schema, docs/report_schema.md)
and the terminal logs beside them, and writes one page: command, summary per member and grade,
every gate's verdict with its worst ratio and evidence, the replay lines of failures, and each
member's log tail. A member whose run was cut short still shows the grades it finished (kcv
rewrites its JSON after every report) and says so. It only formats: every verdict is kcv's.

  python3 glr/check/pipeline_report.py DIR --command "..." > pipeline.md
  python3 glr/check/pipeline_report.py DIR --op decode --command "..." > decode.md
  python3 glr/check/pipeline_report.py DIR --grades bf16 --members gdn,ssd,la,deltanet > mma.md

--grades names the grades each member's run was asked for (default fp32,bf16): a member with
fewer reports than grades is reported as cut short.

With --op decode the reports are the decode ops' (glr.<member>.decode, one report per member:
the decode kernel has one precision contract).
"""

import argparse
import glob
import json
import os
import sys

GATES = ("CMP-01", "ORD-02", "EXC-01", "RES-02")


def load(path):
    try:
        with open(path) as f:
            return json.load(f).get("reports", [])
    except (OSError, ValueError) as e:
        return {"error": f"{os.path.basename(path)}: {type(e).__name__}: {e}"}


def cell(gate):
    if gate is None:
        return "-"
    ratio = gate.get("evidence", {}).get("worst_ratio")
    word = gate.get("verdict", "?").upper()
    if word in ("PASS", "FAIL") and isinstance(ratio, (int, float, str)):
        shown = f"{ratio:.3g}" if not isinstance(ratio, str) else ratio  # "inf": kcv's JSON
        return f"{word} {shown} ({gate.get('probes_run', 0)} probes)"
    return word


CHUNK_TEXT = ("Each row is one `kcv verify` report: kernel [precision grade]. Cells: verdict, worst "
              "|y − y*|/tau (CMP-01; inf for a tolerance-free violation), probes judged. CMP-01 "
              "runs the full case list (`--glr-cases full`), ORD-02 10 runs of forward + "
              "backward, EXC-01 a NaN in one token of v against the token-serial fp64 oracle, "
              "RES-02 the ptxas resource report of the build.")
DECODE_TEXT = ("Each row is one `kcv verify` report of a decode op: kernel [precision grade]. "
               "Cells: verdict, worst |y − y*|/tau (CMP-01; inf for a tolerance-free "
               "violation), probes judged. CMP-01 runs the decode case list (`--glr-cases "
               "full`: one and a few tokens per sequence, with and without an initial state, "
               "varlen, GVA, bf16, fp16 and fp32 q, k, v, K, V up to 256) against the "
               "token-serial fp64 oracle, ORD-02 10 runs of one varlen GVA decode call, EXC-01 "
               "a NaN in one token of v, RES-02 the ptxas resource report of the build.")


def render(directory, command, expected, op="chunk", grades=("fp32", "bf16")):
    decode = op == "decode"
    title = "GLR decode kernel" if decode else "GLR kernels"
    suffix = ".decode" if decode else ""
    wanted = 1 if decode else len(grades)  # reports per member: one per grade
    lines = [f"# {title} through kcv's pipeline", "", "Command (repository root):", "",
             f"    {command}", ""]
    env = os.path.join(directory, "env.txt")
    if os.path.exists(env):
        with open(env) as f:
            lines += ["```", f.read().strip(), "```", ""]
    lines += [DECODE_TEXT if decode else CHUNK_TEXT, "",
              "| kernel | " + " | ".join(GATES) + " | passed |",
              "|---|" + "---|" * (len(GATES) + 1)]
    failures, details = 0, []
    for member in expected:
        path = os.path.join(directory, f"{member}.json")
        reports = load(path) if os.path.exists(path) else {"error": "no JSON report"}
        if isinstance(reports, dict):
            lines.append(f"| glr.{member}{suffix} | " + " | ".join(["-"] * len(GATES)) +
                         f" | no report ({reports['error']}) |")
            failures += 1
            continue
        for r in reports:
            gates = {g["gate"]: g for g in r.get("gates", [])}
            lines.append(f"| {r['kernel']} | " + " | ".join(cell(gates.get(g)) for g in GATES) +
                         f" | {'yes' if r.get('passed') else '**no**'} |")
            failures += 0 if r.get("passed") else 1
            for g in r.get("gates", []):
                if g.get("verdict") in ("fail", "error"):
                    details.append(f"- {r['kernel']} {g['gate']} {g['verdict']}: "
                                   f"{g.get('evidence', {}).get('summary') or g.get('reason')}")
                    if g.get("replay"):
                        details.append(f"  `{g['replay']}`")
        if len(reports) < wanted:
            lines.append(f"| glr.{member}{suffix} | (only {len(reports)} grade(s) finished) "
                         "| | | | |")
            failures += 1
    lines += ["", f"**{failures} report(s) not passed or missing.**", ""]
    if details:
        lines += ["## Failures and errors", ""] + details + [""]
    lines += ["## Evidence per gate", ""]
    for member in expected:
        path = os.path.join(directory, f"{member}.json")
        reports = load(path) if os.path.exists(path) else []
        for r in reports if isinstance(reports, list) else []:
            lines += [f"### {r['kernel']}", "", "| gate | verdict | probes | evidence |",
                      "|---|---|---|---|"]
            for g in r.get("gates", []):
                ev = (g.get("evidence", {}).get("summary") or g.get("reason") or "").replace("|", "/")
                lines.append(f"| {g['gate']} | {g['verdict']} | {g.get('probes_run', 0)} | {ev} |")
            lines.append("")
    lines += ["## Logs (last lines)", ""]
    for log in sorted(glob.glob(os.path.join(directory, "*.log"))):
        with open(log, errors="replace") as f:
            tail = f.read().splitlines()[-40:]
        lines += [f"### {os.path.basename(log)}", "", "```"] + tail + ["```", ""]
    return "\n".join(lines), failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--command", default="")
    ap.add_argument("--members", default="gdn,kda,gla,ssd,la,deltanet")
    ap.add_argument("--op", choices=("chunk", "decode"), default="chunk")
    ap.add_argument("--grades", default="fp32,bf16")
    args = ap.parse_args()
    text, failures = render(args.directory, args.command, args.members.split(","), args.op,
                            args.grades.split(","))
    sys.stdout.write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
