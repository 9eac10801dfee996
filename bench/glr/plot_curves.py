"""Draws the loss curves of the training recipe (bench/glr/train_lm.py) into one figure: one panel per
family, one line per backend (kcv, fla, reference), training loss averaged over bins of steps,
validation losses as dots; with --table, a markdown table of every run's summary (losses,
tokens/s, kcv's reproducibility verdict); with --agreement, kcv's runs compared with the other
backends' and with its own second run over the steps both reached.

  python bench/glr/plot_curves.py --runs out/train --out docs/glr/training_curves_h200.svg \
      --table out/train/summary.md

Reads <runs>/<family>/<backend>.jsonl for every family and backend present. Drawn with
matplotlib (the format follows --out's suffix: .svg, .png or .pdf)."""

import argparse
import json
import os
import sys

FAMILIES = ("gdn", "kda", "gla", "ssd", "la")
BACKENDS = {"kcv": "#1f77b4", "fla": "#ff7f0e", "reference": "#2ca02c"}
DASH = {"kcv": "-", "fla": "--", "reference": ":"}
COLUMNS = 3


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


def read_runs(runs_dir):
    """{family: {backend: (train points, eval points, summary)}} of the logs present with at
    least one training step."""
    found = {}
    for family in FAMILIES:
        runs = {}
        for backend in BACKENDS:
            path = os.path.join(runs_dir, family, f"{backend}.jsonl")
            if os.path.isfile(path) and os.path.getsize(path) > 0:
                runs[backend] = read_log(path)
        runs = {b: r for b, r in runs.items() if r[0]}
        if runs:
            found[family] = runs
    if not found:
        raise SystemExit(f"plot_curves: no <family>/<backend>.jsonl logs under {runs_dir}")
    return found


def render(runs_dir, bin_size, out_path):
    """Draws every family's panel into out_path (the format from its suffix: .svg, .png, .pdf)."""
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    found = read_runs(runs_dir)
    rows = (len(found) + COLUMNS - 1) // COLUMNS
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.2 * COLUMNS, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(found):]:
        ax.set_visible(False)
    for ax, (family, runs) in zip(axes.flat, found.items()):
        steps = max(len(train) for train, _, _ in runs.values())
        size = bin_size or max(1, steps // 200)
        for backend, (train, evals, _) in runs.items():
            curve = binned(train, size)
            ax.plot([x for x, _ in curve], [y for _, y in curve], color=BACKENDS[backend],
                    linestyle=DASH[backend], linewidth=1.2, label=backend)
            if evals:
                ax.plot([x for x, _ in evals], [y for _, y in evals], "o", markersize=3,
                        color=BACKENDS[backend])
        # The first 5 % of the steps (the loss from ln 256 down) would set the whole range.
        tail = [y for train, evals, _ in runs.values()
                for _, y in train[max(1, len(train) // 20):] + evals]
        if tail:
            ax.set_ylim(min(tail) - 0.05, max(tail) + 0.05)
        ax.set_title(family, loc="left", fontweight="bold")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(alpha=0.3)
    fig.suptitle("training loss (bin means; dots: validation loss) per family and backend, "
                 "byte-level LM", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)


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


def _losses(path):
    """{step: training loss} of a run's log ({} when it has none)."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return {}
    return dict(read_log(path)[0])


def agreement(runs_dir, window=50):
    """A markdown table comparing each family's kcv run with the others over the steps both
    reached, for runs stopped before their end too: the steps each run reached, kcv's mean
    training loss minus the other's over the last `window` common steps, and over how many steps
    kcv's second run (.run2) equals the first bitwise."""
    lines = [f"| family | kcv steps | reference steps | fla steps | kcv − reference (last "
             f"{window} common) | kcv − fla (last {window} common) | kcv repro (steps compared) |",
             "|---|---|---|---|---|---|---|"]
    for family in FAMILIES:
        kcv = _losses(os.path.join(runs_dir, family, "kcv.jsonl"))
        if not kcv:
            continue
        cells = [family, str(len(kcv))]
        others = {b: _losses(os.path.join(runs_dir, family, f"{b}.jsonl"))
                  for b in ("reference", "fla")}
        cells += [str(len(others["reference"])), str(len(others["fla"]))]
        for other in others.values():
            common = sorted(set(kcv) & set(other))[-window:]
            if not common:
                cells.append("—")
                continue
            mk = sum(kcv[s] for s in common) / len(common)
            mo = sum(other[s] for s in common) / len(common)
            cells.append(f"{mk - mo:+.4f} ({mk:.4f} / {mo:.4f})")
        second = _losses(os.path.join(runs_dir, family, "kcv.run2.jsonl"))
        if not second:
            cells.append("no second run")
        else:
            same = all(kcv.get(s) == v for s, v in second.items())
            cells.append(f"{'identical' if same else 'DIFFERENT'} ({len(second)})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="out/train", help="folder of <family>/<backend>.jsonl logs")
    p.add_argument("--out", required=True, help="the figure to write (.svg, .png or .pdf)")
    p.add_argument("--table", help="also write a markdown table of the runs' summaries here")
    p.add_argument("--agreement", help="also write agreement()'s table (runs compared over the "
                   "steps both reached) here")
    p.add_argument("--bin", type=int, default=0,
                   help="steps averaged per point (default: steps / 200)")
    args = p.parse_args(argv)
    render(args.runs, args.bin, args.out)
    print(f"wrote {args.out}")
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(table(args.runs))
        print(f"wrote {args.table}")
    if args.agreement:
        with open(args.agreement, "w", encoding="utf-8") as f:
            f.write(agreement(args.runs))
        print(f"wrote {args.agreement}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
