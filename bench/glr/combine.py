"""Joins the per-shape outputs of bench.py (one run per shape) into one markdown file:
each file's header paragraphs once (identical ones kept once), then one table of every row.

  python3 bench/glr/combine.py out/bench_1.md out/bench_2.md > docs/glr/bench.md
"""

import sys


def main(paths):
    header, rows, seen, tails = [], [], set(), []
    table_head = None
    for path in paths:
        with open(path) as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.startswith("| shape |") or line.startswith("|---"):
                table_head = table_head or []
                if line not in table_head:
                    table_head.append(line)
            elif line.startswith("| "):
                rows.append(line)
            elif line.startswith("Total "):
                tails.append(f"{path}: {line}")
            elif line.startswith("# "):
                if not any(h.startswith("# ") for h in header):
                    device = line.rsplit(", ", 1)[-1]
                    header.append(f"# kcv.glr vs fla: forward and forward+backward times, bf16, "
                                  f"{device}")
            elif not line.strip():
                if header and header[-1].strip():
                    header.append("")
            elif line not in seen:
                seen.add(line)
                header.append(line)
    while header and not header[-1].strip():
        header.pop()
    out = header + [""] + (table_head or []) + rows + [""] + tails
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
