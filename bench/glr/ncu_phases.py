"""Where inside a kernel the time goes: Nsight Compute's warp-state samples per SASS instruction,
folded into the kernel's barrier-delimited phases.

A GLR kernel runs in phases separated by CTA barriers (`__syncthreads`, SASS `BAR.SYNC`). Nsight
Compute's SourceCounters section samples, every few cycles, what each warp waits on and at which
instruction; its source page lists the samples per SASS instruction and per stall reason. This
script cuts each kernel's SASS, in address order, after every `BAR` instruction and prints per
phase: its share of the kernel's
samples, its instruction mix (HMMA tensor-core products, LDSM shared-memory matrix loads, LDGSTS
asynchronous copies, MUFU special functions, global stores), its two largest stall reasons and its
hottest instruction; then the loops (backward branches) with their share; with --hot N the
kernel's N hottest instructions, each with its phase and its own stall reasons. A warp waiting at a barrier is sampled a few instructions after it, so the
"barrier" samples inside a phase are counted with the phase the preceding barrier closes (the
wait for that phase's slowest warp). Loops stay in address order: a phase inside a loop body
holds every iteration's samples.

Two modes.

  (default)   runs `ncu --section SourceCounters` on one forward+backward of kcv's bf16 grade for
              --member at --shape (ncu_profile.py --target, after two unprofiled warm-up calls),
              on the kernels whose names match --kernels, exports the source page as CSV into
              --work and writes the phase tables (--out).
  --csv FILE  folds an exported source page (`ncu -i REPORT --page source --csv --print-source
              sass`) without running anything.

  PYTHONPATH=/tmp/site python3 bench/glr/ncu_phases.py --member gdn --shape 1 --out phases.md
  PYTHONPATH=/tmp/site python3 bench/glr/ncu_phases.py --member gdn --hot 20 --out phases.md
  python3 bench/glr/ncu_phases.py --csv src.csv --out phases.md

Samples are counts, not times: a phase's share of the samples is its share of the warps' time
on the SM, which is its share of the kernel's duration only where warps are resident throughout.
"""

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ncu_profile  # noqa: E402  (beside this file: its ncu runner)

#: Instruction classes counted per phase: (column, opcode roots: the opcode before its first dot).
MIX = [("HMMA", ("HMMA",)), ("LDSM", ("LDSM",)), ("LDGSTS", ("LDGSTS",)), ("MUFU", ("MUFU",)),
       ("LDS/STS", ("LDS", "STS")), ("LDG/STG", ("LDG", "STG"))]
#: ncu's per-reason sample columns (stall_<reason>); "Not Issued" variants are left out.
REASON = re.compile(r"^stall_([a-z_]+)$")


def opcode(source):
    """The opcode of a SASS line ('@!P0 BAR.SYNC.DEFER_BLOCKING 0x0' -> 'BAR.SYNC...')."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def read_kernels(lines):
    """[(kernel name, [row dict])] from a source-page CSV: each kernel's block starts with a
    "Kernel Name" line and a header line; a kernel listed twice with the same rows is kept once."""
    kernels, seen = [], set()
    name, header, rows = None, None, []

    def flush():
        if name is not None and rows:
            key = (name, len(rows), rows[0].get("Address"))
            if key not in seen:
                seen.add(key)
                kernels.append((name, rows))

    for rec in csv.reader(lines):
        if not rec:
            continue
        if rec[0] == "Kernel Name":
            flush()
            name, header, rows = rec[1] if len(rec) > 1 else "?", None, []
        elif header is None:
            header = rec
        else:
            rows.append(dict(zip(header, rec)))
    flush()
    return kernels


def number(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def phases(rows):
    """The rows cut after every BAR instruction: [[row]] in address order."""
    ordered = sorted(rows, key=lambda r: int(r.get("Address", "0"), 16))
    out, cur = [], []
    for r in ordered:
        cur.append(r)
        if opcode(r.get("Source", "")).startswith("BAR"):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


SAMPLES = "Warp Stall Sampling (All Samples)"


def phase_samples(parts, reasons):
    """Per phase (its samples, {reason: samples}). A warp stalls on "barrier" only at a BAR, but
    the samples land a few instructions later (the wait ends, then the sample is taken): every
    barrier sample of a phase but those at its own closing BAR is moved to the phase before it,
    which the preceding BAR closes."""
    out = []
    for ph in parts:
        total = sum(number(r.get(SAMPLES)) for r in ph)
        by = {REASON.match(c).group(1): sum(number(r.get(c)) for r in ph) for c in reasons}
        out.append([total, by])
    for k in range(1, len(parts)):
        moved = sum(number(r.get("stall_barrier")) for r in parts[k]
                    if not opcode(r.get("Source", "")).startswith("BAR"))
        if moved > 0:
            out[k][0] -= moved
            out[k][1]["barrier"] -= moved
            out[k - 1][0] += moved
            out[k - 1][1]["barrier"] = out[k - 1][1].get("barrier", 0.0) + moved
    return out


def short_name(name):
    """'void kcv::glr::dev::grad_kernel<(kcv::glr::GateKind)1, (bool)1>(...)' ->
    'grad_kernel<1, 1>'."""
    m = re.search(r"(\w+)<(.*)>\(", name)
    if not m:
        return name
    args = re.sub(r"\([^()]*\)", "", m.group(2)).replace(" ", "")
    return f"{m.group(1)}<{args.replace(',', ', ')}>"


def phase_table(name, rows, min_share=1.0):
    """Markdown lines: one row per phase holding at least min_share % of the samples."""
    reasons = [c for c in rows[0] if REASON.match(c)] if rows else []
    total = sum(number(r.get(SAMPLES)) for r in rows) or 1.0
    head = ["phase", "addresses", "instr.", "samples %"] + [c for c, _ in MIX] + [
        "top stalls (% of the phase)", "hottest instruction (% of the kernel)"]
    lines = [f"### `{short_name(name)}`", "",
             f"{len(rows)} SASS instructions, {total:.0f} samples; phases under {min_share:g} % "
             "of the samples are summed in the last row.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rest, rest_n = 0.0, 0
    parts = phases(rows)
    for k, (ph, (s, by)) in enumerate(zip(parts, phase_samples(parts, reasons))):
        if 100.0 * s / total < min_share:
            rest += s
            rest_n += 1
            continue
        ops = [opcode(r.get("Source", "")) for r in ph]
        roots = [op.split(".")[0] for op in ops]
        mix = [str(sum(root in names for root in roots)) for _, names in MIX]
        top = sorted(((v, why) for why, v in by.items()), reverse=True)[:2]
        stalls = ", ".join(f"{why} {100.0 * v / s:.0f}" for v, why in top if v > 0 and s > 0)
        hot = max(ph, key=lambda r: number(r.get(SAMPLES)))
        hot_text = " ".join(hot.get("Source", "").split())[:60].replace("|", "/")
        first, last = ph[0].get("Address", "?"), ph[-1].get("Address", "?")
        lines.append("| " + " | ".join(
            [str(k), f"{first[-5:]}–{last[-5:]}", str(len(ph)), f"{100.0 * s / total:.1f}"] + mix
            + [stalls or "-",
               f"`{hot_text}` ({100.0 * number(hot.get(SAMPLES)) / total:.1f})"]) + " |")
    if rest_n:
        lines.append(f"| {rest_n} others | | | {100.0 * rest / total:.1f} |"
                     + " |" * (len(MIX) + 2))
    return lines + [""]


def loops(rows):
    """[(first address, branch address, rows of the body)] of every backward branch (a BRA whose
    target lies at or before it): the loops in the SASS, nested ones each on their own."""
    ordered = sorted(rows, key=lambda r: int(r.get("Address", "0"), 16))
    out = []
    for r in ordered:
        words = r.get("Source", "").split()
        if not opcode(r.get("Source", "")).startswith("BRA") or not words:
            continue
        try:
            target, here = int(words[-1], 16), int(r["Address"], 16)
        except (KeyError, ValueError):
            continue
        if target <= here:
            body = [x for x in ordered if target <= int(x["Address"], 16) <= here]
            out.append((body[0]["Address"], r["Address"], body))
    return out


def loop_table(rows, min_share=1.0):
    """Markdown lines: the loops holding at least min_share % of the kernel's samples."""
    total = sum(number(r.get(SAMPLES)) for r in rows) or 1.0
    found = []
    for first, last, body in loops(rows):
        s = sum(number(r.get(SAMPLES)) for r in body)
        if 100.0 * s / total >= min_share:
            roots = [opcode(r.get("Source", "")).split(".")[0] for r in body]
            mix = ", ".join(f"{n} {c}" for n, c in
                            ((n, sum(root in names for root in roots)) for n, names in MIX) if c)
            runs = number(body[-1].get("Instructions Executed"))
            found.append((100.0 * s / total, first, last, len(body), mix, runs))
    if not found:
        return []
    lines = ["Loops (backward branches; a nested loop's samples are also its outer loop's):", "",
             "| loop | instr. | samples % | mix | branch executed (warp-level) |",
             "|---|---|---|---|---|"]
    for share, first, last, n, mix, runs in sorted(found, reverse=True):
        lines.append(f"| {first[-5:]}–{last[-5:]} | {n} | {share:.1f} | {mix or '-'} | "
                     f"{runs:.0f} |")
    return lines + [""]


def hot_table(rows, n):
    """Markdown lines: the kernel's n instructions with the most samples, each with its phase
    and its own two largest stall reasons (which instruction of a phase waits, and on what)."""
    if n <= 0 or not rows:
        return []
    reasons = [c for c in rows[0] if REASON.match(c)]
    total = sum(number(r.get(SAMPLES)) for r in rows) or 1.0
    phase_of = {id(r): k for k, ph in enumerate(phases(rows)) for r in ph}
    hot = [r for r in sorted(rows, key=lambda r: number(r.get(SAMPLES)), reverse=True)[:n]
           if number(r.get(SAMPLES)) > 0]
    lines = [f"The {len(hot)} hottest instructions:", "",
             "| address | phase | instruction | samples % | top stalls (% of its samples) |",
             "|---|---|---|---|---|"]
    for r in hot:
        s = number(r.get(SAMPLES))
        top = sorted(((number(r.get(c)), REASON.match(c).group(1)) for c in reasons),
                     reverse=True)[:2]
        stalls = ", ".join(f"{why} {100.0 * v / s:.0f}" for v, why in top if v > 0)
        text = " ".join(r.get("Source", "").split())[:70].replace("|", "/")
        lines.append(f"| {r.get('Address', '?')[-5:]} | {phase_of[id(r)]} | `{text}` | "
                     f"{100.0 * s / total:.1f} | {stalls or '-'} |")
    return lines + [""]


def fold(csv_path, min_share, hot=0):
    with open(csv_path, encoding="utf-8", errors="replace") as f:
        kernels = read_kernels(f)
    lines = []
    for name, rows in kernels:
        lines += (phase_table(name, rows, min_share) + loop_table(rows, min_share)
                  + hot_table(rows, hot))
    return kernels, lines


def capture(args):
    """ncu with SourceCounters on one step; returns the exported CSV's path (None on failure)."""
    os.makedirs(args.work, exist_ok=True)
    rep = os.path.join(args.work, f"{args.member}_source")
    cmd = [args.ncu, "--clock-control", "none", "--profile-from-start", "off", "--section",
           "SourceCounters", "--section", "WarpStateStats", "-k", f"regex:{args.kernels}", "-f",
           "-o", rep, sys.executable, "-u", os.path.join(HERE, "ncu_profile.py"), "--target",
           "kcv-bf16", "--member", args.member, "--shape", args.shape]
    rc, out, err = ncu_profile.run_ncu(cmd, args.timeout)
    with open(rep + ".log", "w", encoding="utf-8") as f:
        f.write(" ".join(cmd) + "\n" + out + err)
    if rc != 0 or not os.path.exists(rep + ".ncu-rep"):
        print(f"ncu exit {rc}; see {rep}.log", flush=True)
        return None
    out = rep + ".csv"
    with open(out, "w", encoding="utf-8") as f:
        exp = subprocess.run([args.ncu, "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                              "--print-source", "sass"], stdout=f, stderr=subprocess.PIPE,
                             text=True, timeout=args.timeout)
    if exp.returncode != 0:
        print(f"export: ncu exit {exp.returncode}: {exp.stderr.strip()[:300]}", flush=True)
        return None
    os.remove(rep + ".ncu-rep")  # the CSV holds what the tables need (the report is large)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=None, help="fold this exported source page; run nothing")
    ap.add_argument("--member", default="gdn")
    ap.add_argument("--shape", default="1")
    ap.add_argument("--kernels", default="prepare_kernel|state_output_kernel|dh_scan_kernel|"
                    "grad_kernel|grad_channel_kernel|wy_grad_kernel|wy_channel_kernel",
                    help="regex of the kernel names to profile")
    ap.add_argument("--min-share", type=float, default=1.0,
                    help="phases under this % of a kernel's samples are summed in one row")
    ap.add_argument("--hot", type=int, default=0, metavar="N",
                    help="also list each kernel's N instructions with the most samples")
    ap.add_argument("--out", default="phases.md")
    ap.add_argument("--work", default=None, help="folder of the CSV (default: beside --out)")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--timeout", type=int, default=240,
                    help="seconds for the capture, and again for the export")
    args = ap.parse_args()
    if args.csv:
        path, what = args.csv, f"the source page {os.path.basename(args.csv)}"
    else:
        args.work = args.work or os.path.join(os.path.dirname(os.path.abspath(args.out)),
                                              "phases")
        path = capture(args)
        if path is None:
            return 1
        what = f"{args.member} at shape {args.shape}, kcv bf16, one forward+backward"
    kernels, body = fold(path, args.min_share, args.hot)
    lines = [f"# Warp-state samples by phase: {what}", "",
             f"Command: `python3 bench/glr/ncu_phases.py {' '.join(sys.argv[1:])}`", "",
             "A phase is the SASS between two CTA barriers in address order (the barrier closes "
             "its phase). samples %: the phase's share of the kernel's warp-state samples "
             "(ncu SourceCounters); HMMA … LDG/STG: instructions of each kind in the phase's "
             "code (not executed counts); top stalls: the two largest reasons' shares of the "
             "phase's samples.", ""] + body
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0 if kernels else 1


if __name__ == "__main__":
    sys.exit(main())
