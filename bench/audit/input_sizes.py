"""How large the corpora's problems are: get_inputs() of every row's reference, run with torch's
tensor factories sending their tensors to the `meta` device (shapes and dtypes, no memory), so
the whole corpus is sized in seconds on any machine. With --store, each size band is split by
the kernel's status in an audit store, and the final kernels' statuses are counted per band:
the H200 audit's big problems are the ones that time out (docs/audit/README.md).

Not a test: it prints figures. A row whose reference cannot run this way (code that needs a GPU,
say) is counted as unknown; a factory call that has no meta kernel, and tensors made otherwise
(torch.from_numpy), are real, so a few rows can still allocate their full size. Only the tensors
get_inputs() returns at its top level are counted, as the audit's workers do. The corpora's code is executed: run it where the
audit would run it, never on a machine that must not run third-party code.

  .venv/bin/python bench/audit/input_sizes.py ../shared/corpora/*.jsonl [--store docs/audit/merged.db]
      [--ids-below GIB FILE]

--ids-below writes the ids of the rows whose inputs are known to be under GIB GiB (and, with
--store, not final there, or `error`: ours, for AUDIT_RETRY=error), one a line, for `kcv audit --ids-from FILE`: a run that leaves the
big problems for later.
"""

import argparse
import collections
import json
import sqlite3

import torch

FACTORIES = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "randn_like",
             "rand_like", "zeros_like", "ones_like", "tensor", "arange", "linspace", "eye",
             "randperm", "normal")
BANDS = ((6, ">= 6 GiB"), (4, "4-6 GiB"), (1, "1-4 GiB"), (0, "< 1 GiB"))  # GiB, name


def on_meta(factory):
    def make(*args, **kwargs):
        try:
            return factory(*args, **{**kwargs, "device": "meta"})
        except (TypeError, RuntimeError, NotImplementedError):  # no meta kernel: a real tensor
            return factory(*args, **kwargs)
    return make


def input_bytes(reference_code: str) -> int | None:
    namespace: dict = {}
    try:
        exec(compile(reference_code, "reference", "exec"), namespace)  # noqa: S102 - see above
        made = namespace["get_inputs"]()
    except Exception:  # noqa: BLE001 - any failure: size unknown
        return None
    return sum(t.numel() * t.element_size() for t in made if isinstance(t, torch.Tensor))


def band(size: int | None) -> str:
    if size is None:
        return "unknown"
    return next(name for lo, name in BANDS if size >= lo * 2**30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpora", nargs="+", help="corpus .jsonl files")
    p.add_argument("--store", help="an audit store: split each band by kernel status")
    p.add_argument("--ids-below", nargs=2, metavar=("GIB", "FILE"),
                   help="write the ids of rows with inputs under GIB GiB (not final in --store, or error)")
    p.add_argument("--ids-at-least", type=float, default=0.0, metavar="GIB",
                   help="with --ids-below: only the rows with inputs of at least GIB GiB (a band)")
    args = p.parse_args()
    for name in FACTORIES:
        setattr(torch, name, on_meta(getattr(torch, name)))
    sizes: dict[str, int | None] = {}
    for path in args.corpora:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "id" in row:
                    sizes[row["id"]] = input_bytes(row.get("reference_code") or "")
    status: dict[str, str] = {}
    if args.store:
        status = dict(sqlite3.connect(args.store).execute("SELECT kernel_id, status FROM kernels"))
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for kernel_id, size in sizes.items():
        s = status.get(kernel_id, "-")
        table[band(size)][s] += 1
    print(f"{len(sizes)} rows; inputs of one get_inputs() call, by band"
          + (" and status in the store" if args.store else ""))
    for b in [name for _, name in BANDS[::-1]] + ["unknown"]:
        if b in table:
            counts = table[b]
            detail = ", ".join(f"{k} {v}" for k, v in counts.most_common())
            print(f"  {b:>10}: {sum(counts.values()):4d}  ({detail})")
    if args.ids_below:
        limit, path = float(args.ids_below[0]) * 2**30, args.ids_below[1]
        low = args.ids_at_least * 2**30
        ids = sorted(k for k, size in sizes.items() if size is not None and low <= size < limit
                     and status.get(k, "pending") in ("pending", "running", "error"))
        band_text = f"of at least {args.ids_at_least:g} GiB and " if low else ""
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# {len(ids)} rows with inputs {band_text}under {args.ids_below[0]} GiB"
                    + (f", not final (or error) in {args.store}" if args.store else "")
                    + " (bench/audit/input_sizes.py)\n")
            f.writelines(k + "\n" for k in ids)
        print(f"{len(ids)} ids written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
