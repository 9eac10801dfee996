"""Draws the loss curves of the training recipe (bench/glr/train_lm.py) into one SVG: one panel per
family, one line per backend (kcv, fla, reference), training loss averaged over bins of steps,
validation losses as dots, each backend's median tokens/s in the legend; with --table, a
markdown table of every run's summary (losses, tokens/s, kcv's reproducibility verdict).

  python bench/glr/plot_curves.py --runs out/train --out docs/glr/training_curves_h200.svg \
      --table out/train/summary.md

Reads <runs>/<family>/<backend>.jsonl for every family and backend present. The SVG is written by
hand (no plotting library is a dependency of kcv): a few hundred lines of polyline text."""

import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

FAMILIES = ("gdn", "kda", "gla", "ssd", "la")
BACKENDS = {"kcv": "#1f77b4", "fla": "#ff7f0e", "reference": "#2ca02c"}
DASH = {"kcv": "", "fla": "6 3", "reference": "2 2"}
PANEL_W, PANEL_H, MARGIN, COLUMNS = 360, 220, 48, 3


def read_log(path):
    train, evals, summary = [], [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["kind"] == "train":
                train.append((row["step"], row["loss"]))
            elif row["kind"] == "eval":
                evals.append((row["step"], row["val_loss"]))
            elif row["kind"] == "summary":
                summary = row
    return train, evals, summary


def binned(points, size):
    out = []
    for i in range(0, len(points), size):
        chunk = points[i:i + size]
        out.append((sum(s for s, _ in chunk) / len(chunk), sum(v for _, v in chunk) / len(chunk)))
    return out


def panel(family, runs, x0, y0, bin_size):
    curves = {b: (binned(t, bin_size), e, s) for b, (t, e, s) in runs.items()}
    xs = [p[0] for c, e, _ in curves.values() for p in c + e]
    skip = lambda c: c[max(1, len(c) // 20):] or c  # noqa: E731 - the first 5% sets no range
    ys = [p[1] for c, e, _ in curves.values() for p in skip(c) + e]
    x_lo, x_hi = 0.0, max(xs) or 1.0
    y_lo, y_hi = min(ys), max(ys)
    y_hi = y_hi if y_hi > y_lo else y_lo + 1.0
    w, h = PANEL_W - MARGIN - 10, PANEL_H - 2 * MARGIN + 10

    def at(x, y):
        y = min(max(y, y_lo), y_hi)
        return (x0 + MARGIN + (x - x_lo) / (x_hi - x_lo) * w,
                y0 + 28 + (y_hi - y) / (y_hi - y_lo) * h)

    out = [f'<rect x="{x0 + MARGIN}" y="{y0 + 28}" width="{w}" height="{h}" fill="none" '
           f'stroke="#999"/>',
           f'<text x="{x0 + MARGIN}" y="{y0 + 20}" font-weight="bold">{escape(family)}</text>']
    for frac in (0.0, 0.5, 1.0):
        y = y_lo + frac * (y_hi - y_lo)
        _, py = at(x_lo, y)
        out.append(f'<text x="{x0 + MARGIN - 4}" y="{py + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = x_lo + frac * (x_hi - x_lo)
        px, _ = at(x, y_lo)
        out.append(f'<text x="{px:.1f}" y="{y0 + 28 + h + 14}" text-anchor="middle">{x:.0f}</text>')
    for i, (backend, (curve, evals, summary)) in enumerate(curves.items()):
        color = BACKENDS[backend]
        pts = " ".join(f"{px:.1f},{py:.1f}" for px, py in (at(x, y) for x, y in curve))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.3" '
                   f'stroke-dasharray="{DASH[backend]}"/>')
        for x, y in evals:
            px, py = at(x, y)
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2" fill="{color}"/>')
        rate = f", {summary['tokens_per_s'] / 1e3:.0f}k tok/s" if summary else ""
        # The legend sits in the plot's top right corner, which a falling loss leaves empty.
        out.append(f'<text x="{x0 + MARGIN + w - 6}" y="{y0 + 42 + 13 * i}" text-anchor="end" '
                   f'fill="{color}">{escape(backend)}{escape(rate)}</text>')
    return out


def render(runs_dir, bin_size):
    found = {}
    for family in FAMILIES:
        runs = {}
        for backend in BACKENDS:
            path = os.path.join(runs_dir, family, f"{backend}.jsonl")
            if os.path.isfile(path):
                runs[backend] = read_log(path)
        runs = {b: r for b, r in runs.items() if r[0]}
        if runs:
            found[family] = runs
    if not found:
        raise SystemExit(f"plot_curves: no <family>/<backend>.jsonl logs under {runs_dir}")
    rows = (len(found) + COLUMNS - 1) // COLUMNS
    width, height = COLUMNS * PANEL_W, rows * PANEL_H + 30
    body = []
    for i, (family, runs) in enumerate(found.items()):
        steps = max(len(r[0]) for r in runs.values())
        size = bin_size or max(1, steps // 200)
        body += panel(family, runs, (i % COLUMNS) * PANEL_W, 30 + (i // COLUMNS) * PANEL_H, size)
    title = ("training loss (bin means; dots: validation loss) per family and backend, "
             "byte-level LM")
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="18" font-size="13">{escape(title)}</text>',
        *body, "</svg>", ""])


def table(runs_dir):
    """A markdown table of every run's summary, with kcv's reproducibility verdicts."""
    lines = ["| family | backend | parameters | train loss | val loss | tokens/s | "
             "bitwise repro |", "|---|---|---|---|---|---|---|"]
    for family in FAMILIES:
        for backend in BACKENDS:
            path = os.path.join(runs_dir, family, f"{backend}.jsonl")
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f]
            if not rows:  # the run stopped before its config line (an error at its start)
                lines.append(f"| {family} | {backend} | | no log | | | |")
                continue
            params = rows[0].get("parameters", "")
            summary = next((r for r in rows if r["kind"] == "summary"), None)
            repro_path = os.path.join(runs_dir, family, f"{backend}.repro.json")
            repro = "not run"
            if os.path.isfile(repro_path):
                with open(repro_path, encoding="utf-8") as f:
                    repro = "yes" if json.load(f)["identical"] else "NO"
            if summary is None:
                lines.append(f"| {family} | {backend} | {params} | unfinished | | | {repro} |")
                continue
            lines.append(f"| {family} | {backend} | {params} | {summary['train_loss']:.4f} | "
                         f"{summary['val_loss']:.4f} | {summary['tokens_per_s']:.0f} | {repro} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="out/train", help="folder of <family>/<backend>.jsonl logs")
    p.add_argument("--out", required=True, help="the SVG to write")
    p.add_argument("--table", help="also write a markdown table of the runs' summaries here")
    p.add_argument("--bin", type=int, default=0,
                   help="steps averaged per point (default: steps / 200)")
    args = p.parse_args(argv)
    svg = render(args.runs, args.bin)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"wrote {args.out}")
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(table(args.runs))
        print(f"wrote {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
