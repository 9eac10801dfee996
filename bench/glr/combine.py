"""Joins the outputs of bench.py runs (e.g. one per shape, or "1,2" and "3,varlen") into one
markdown file: the title once, each run's command and notes (identical lines kept once), then
each section ("## Times (ms)", "## Achieved throughput", "## Targets") once, its text once and
its table with every run's rows, then each run's total time.

  python3 bench/glr/combine.py out/bench_1_2.md out/bench_3_varlen.md > bench.md
"""

import sys


def parse(lines):
    """(preamble lines, [(section title, text lines, table head, table rows)], total line)."""
    pre, sections, total = [], [], None
    cur = None
    for line in lines:
        if line.startswith("Total "):
            total = line
        elif line.startswith("## "):
            cur = [line, [], [], []]
            sections.append(cur)
        elif cur is None:
            pre.append(line)
        elif line.startswith("|"):
            if not cur[2] or (len(cur[2]) == 1 and line.startswith("|---")):
                cur[2].append(line)
            else:
                cur[3].append(line)
        else:
            cur[1].append(line)
    return pre, sections, total


def main(paths):
    title, pre, seen = None, [], set()
    order, merged, tails = [], {}, []
    for path in paths:
        with open(path) as f:
            p, sections, total = parse(f.read().splitlines())
        for line in p:
            if line.startswith("# "):
                title = title or line
            elif not line.strip():
                if pre and pre[-1].strip():
                    pre.append("")
            elif line not in seen:
                seen.add(line)
                pre.append(line)
        for name, text, head, rows in sections:
            if name not in merged:
                order.append(name)
                merged[name] = [[], head, []]
            m = merged[name]
            for line in text:
                if line.startswith("Not measured"):  # true of that run only
                    line = f"{path}: {line}"
                if line.strip() and line not in m[0]:
                    m[0].append(line)
            m[1] = m[1] or head
            m[2] += [r for r in rows if r not in m[2]]
        if total:
            tails.append(f"{path}: {total}")
    out = ([title, ""] if title else []) + pre
    while out and not out[-1].strip():
        out.pop()
    for name in order:
        text, head, rows = merged[name]
        out += ["", name, ""]
        table = head + rows if rows else []
        # the section's prose first, the table, then notes after it (lines naming what was not
        # measured or failed)
        after = [t for t in text if t.startswith(("/", "Failures", "- ")) or ": Not measured" in t]
        before = [t for t in text if t not in after]
        for t in before:
            out += [t, ""]
        out += table + ([""] if table else [])
        for t in after:
            out += [t, ""] if t.startswith("Failures") or ": Not measured" in t else [t]
        while out and not out[-1].strip():
            out.pop()
    out += [""] + tails
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
