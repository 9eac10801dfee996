"""Trains the recipe's byte-level language model (bench/glr/train/, docs/glr/training.md) for one
family on one or more backends, from the same seed and data, and writes one JSONL log per run.

  python bench/glr/train_lm.py --family gdn --backend kcv --check-repro    # kcv twice, compared
  python bench/glr/train_lm.py --family gdn --backend fla
  python bench/glr/train_lm.py --family gdn --backend reference
  python bench/glr/train_lm.py --family gdn --backend kcv,fla,reference --check-repro
  python bench/glr/train_lm.py --family la --backend kcv,reference --tiny --device cpu

Needs kcv's Python package and extension on PYTHONPATH (build/release/python and python/), fla
0.6 and the corpus of scripts/build-text-corpus (--data, default data/text).

Outputs, under --out (default out/train): <family>/<backend>.jsonl, the run's log; with
--check-repro, a second run's <family>/<backend>.run2.jsonl and <family>/<backend>.repro.json,
the comparison of the two runs' loss sequences and final parameters. --compare-to LOG makes the
second run on its own: it writes <backend>.run2.jsonl and compares it with LOG (the first run's
log) into <backend>.repro.json. Exit status 1 when a comparison finds a difference.

Several backends run one after another, each in its own process (a backend binds fla's op names
process-wide, and kcv's backend, once loaded, stays registered with fla)."""

import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts: deterministic

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import backends, loop, model  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", required=True, choices=sorted(model.FAMILIES))
    p.add_argument("--backend", required=True,
                   help="kcv, fla or reference, or a comma-separated list of them")
    p.add_argument("--tiny", action="store_true", help="the CPU smoke-test configuration")
    p.add_argument("--data", default="data/text", help="corpus folder (default data/text)")
    p.add_argument("--out", default="out/train", help="log folder (default out/train)")
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when present)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, help="override the configuration's step count")
    p.add_argument("--batch", type=int, help="override the batch size (sequences)")
    p.add_argument("--seq-len", type=int, help="override the sequence length (bytes)")
    p.add_argument("--check-repro", action="store_true",
                   help="run each backend twice and compare the runs bitwise")
    p.add_argument("--compare-to", metavar="LOG",
                   help="run as the second run of a reproducibility check against LOG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--lift-fla-guard", action="store_true",
                   help="fla backend: run fla's gated backward where fla refuses it (Hopper, "
                        "Triton < 3.7.1, fla issue #640); the log records it")
    args = p.parse_args(argv)
    args.backends = args.backend.split(",")
    for name in args.backends:
        if name not in backends.NAMES:
            p.error(f"--backend: expected kcv, fla or reference, got {name!r}")
    if args.compare_to and (len(args.backends) != 1 or args.check_repro):
        p.error("--compare-to: takes one backend and no --check-repro")
    return args


def config(args):
    cfg = model.TINY if args.tiny else model.FULL
    changes = {k: v for k, v in (("steps", args.steps), ("batch", args.batch),
                                 ("seq_len", args.seq_len)) if v is not None}
    return dataclasses.replace(cfg, **changes)


def check(name, first, second, out_path):
    """Compares two runs, each (losses, parameters sha256), writes the verdict to out_path."""
    verdict = loop.compare(first[0], second[0])
    verdict["parameters_identical"] = first[1] is not None and first[1] == second[1]
    verdict["identical"] = verdict["identical"] and verdict["parameters_identical"]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(verdict, f, indent=2)
        f.write("\n")
    print(f"{name}: {'bitwise identical' if verdict['identical'] else 'DIFFERENT'} "
          f"({out_path})")
    return verdict["identical"]


def train_once(args, backend, device, log):
    r = loop.run(args.family, backend, config(args), args.data, log, device, args.seed,
                 progress=not args.no_progress, lift_fla_guard=args.lift_fla_guard)
    print(f"{args.family}/{backend}: train loss {r['train_loss']:.4f}, val loss "
          f"{r['val_loss']:.4f}, {r['tokens_per_s']:.0f} tokens/s -> {log}")
    return r["losses"], r["parameters_sha256"]


def train_one(args, backend, device):
    folder = os.path.join(args.out, args.family)
    first_log, second_log = (os.path.join(folder, f"{backend}{suffix}.jsonl")
                             for suffix in ("", ".run2"))
    verdict = os.path.join(folder, f"{backend}.repro.json")
    if args.compare_to:
        second = train_once(args, backend, device, second_log)
        return check(f"{args.family}/{backend} repro", loop.read_run(args.compare_to), second,
                     verdict)
    first = train_once(args, backend, device, first_log)
    if not args.check_repro:
        return True
    second = train_once(args, backend, device, second_log)
    return check(f"{args.family}/{backend} repro", first, second, verdict)


def child_argv(args, backend):
    """The command line of one backend's run, from the parsed arguments."""
    argv = ["--family", args.family, "--backend", backend, "--data", args.data, "--out", args.out,
            "--seed", str(args.seed)]
    for flag, value in (("--device", args.device), ("--steps", args.steps),
                        ("--batch", args.batch), ("--seq-len", args.seq_len)):
        argv += [flag, str(value)] if value is not None else []
    for flag, on in (("--tiny", args.tiny), ("--check-repro", args.check_repro),
                     ("--no-progress", args.no_progress),
                     ("--lift-fla-guard", args.lift_fla_guard)):
        argv += [flag] if on else []
    return argv


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if len(args.backends) > 1:
        codes = [subprocess.call([sys.executable, os.path.abspath(__file__),
                                  *child_argv(args, backend)]) for backend in args.backends]
        return max(codes)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    warnings.filterwarnings("ignore", message=".*Triton is not supported.*")
    warnings.filterwarnings("ignore", message=".*ShortConvolution is crucial.*")
    return 0 if train_one(args, args.backends[0], device) else 1


if __name__ == "__main__":
    sys.exit(main())
