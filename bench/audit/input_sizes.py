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
      [--ids-below GIB FILE [--ids-at-least GIB] [--ids-status STATUS...]] [--outputs]
      [--reduce-over GIB [--reduce-to GIB]]

--ids-below writes the ids of the rows whose inputs are known to be under GIB GiB (and, with
--store, not final there, or `error`: ours, for AUDIT_RETRY=error; --ids-status names other
statuses), one a line, for `kcv audit --ids-from FILE` (a run that leaves the big problems for
later) or scripts/device-audit's AUDIT_RETRY_IDS.

--outputs also runs each row's Model on the meta device (built and called under
`torch.device("meta")`, from get_init_inputs and the meta inputs) and sizes its tensor outputs;
the bands and --ids-below then count inputs + outputs, which is what the audit moves on every
call and what its memory estimate scales (kcv/audit/memory.py): a problem with small inputs can
have gigabytes of output (a transposed 3-d convolution, say). A row whose forward has no meta
kernel is unknown.

--reduce-over GIB (with --outputs; run with PYTHONPATH=python) shows what `kcv audit
--reduce-over-gb GIB --reduce-to-gb TO` would do with the rows over GIB: the reduced shape
kcv.audit.reduced.search finds for each (from the source's module constants, as the audit does
from the reference worker's), each try sized on the meta device with its constants applied the
way the worker applies them (a try that cannot be sized counts as one the reference does not
take), by band; and the rows it finds none for, with the reason (those the audit judges at
their own shape).
"""

import argparse
import collections
import json
import signal
import sqlite3

import torch

FACTORIES = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "randn_like",
             "rand_like", "zeros_like", "ones_like", "tensor", "arange", "linspace", "eye",
             "randperm", "normal")
BANDS = ((6, ">= 6 GiB"), (4, "4-6 GiB"), (1, "1-4 GiB"), (0, "< 1 GiB"))  # GiB, name
# Seconds for one Model's meta forward: recurrent layers (LSTM, GRU) step through their sequence
# on meta for minutes; such a row is unknown.
META_FORWARD_S = 5


def _too_slow(signum, frame):
    raise TimeoutError(f"meta forward over {META_FORWARD_S} s")


def on_meta(factory):
    def make(*args, **kwargs):
        try:
            return factory(*args, **{**kwargs, "device": "meta"})
        except (TypeError, RuntimeError, NotImplementedError):  # no meta kernel: a real tensor
            return factory(*args, **kwargs)
    return make


def tensor_bytes(values) -> int:
    return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))


def problem_bytes(reference_code: str, outputs: bool, overrides: dict | None = None) -> int | None:
    """Bytes of one get_inputs() call's tensors, plus (with `outputs`) of Model's tensor outputs
    on them; None when either cannot be had this way. `overrides`: module constants set as the
    audit's worker sets them (kcv.worker.modexec)."""
    namespace: dict = {}
    try:
        code = compile(reference_code, "reference", "exec")
        if overrides:
            import ast  # noqa: PLC0415

            from kcv.worker.modexec import _Override  # noqa: PLC0415

            code = compile(_Override(overrides).visit(ast.parse(reference_code)), "reference",
                           "exec")
        exec(code, namespace)  # noqa: S102 - see above
        namespace.update(overrides or {})
        made = namespace["get_inputs"]()
        size = tensor_bytes(made)
        if outputs:
            signal.signal(signal.SIGALRM, _too_slow)
            signal.alarm(META_FORWARD_S)
            try:
                with torch.device("meta"), torch.no_grad():
                    model = namespace["Model"](*namespace.get("get_init_inputs", lambda: [])())
                    out = model(*[t.to("meta") if isinstance(t, torch.Tensor) else t for t in made])
            finally:
                signal.alarm(0)
            size += tensor_bytes(out if isinstance(out, (tuple, list)) else [out])
    except Exception:  # noqa: BLE001 - any failure: size unknown
        return None
    return size


def int_constants(reference_code: str) -> dict:
    """The module's int constants once run, by the reference worker's own rule
    (kcv.worker.modexec.int_constants): computed ones (M = 16384 * 2) included."""
    import types  # noqa: PLC0415

    from kcv.worker.modexec import int_constants as worker_int_constants  # noqa: PLC0415

    namespace: dict = {}
    try:
        exec(compile(reference_code, "reference", "exec"), namespace)  # noqa: S102 - see above
    except Exception:  # noqa: BLE001 - sized as unknown elsewhere
        return {}
    return worker_int_constants(types.SimpleNamespace(**namespace))


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
    p.add_argument("--ids-status", nargs="+", default=["pending", "running", "error"],
                   metavar="STATUS",
                   help="with --ids-below and --store: the statuses whose rows are written "
                        "(default: pending running error, the rows an audit still runs; "
                        "timeout: those for AUDIT_RETRY=timeout AUDIT_RETRY_IDS=FILE)")
    p.add_argument("--outputs", action="store_true",
                   help="count the Model's outputs too (run on the meta device): inputs + outputs")
    p.add_argument("--reduce-over", type=float, metavar="GIB",
                   help="with --outputs: the reduced shapes of the rows over GIB (see above)")
    p.add_argument("--reduce-to", type=float, default=0.125, metavar="GIB",
                   help="what the reduced shapes aim at (kcv audit --reduce-to-gb; default 0.125)")
    args = p.parse_args()
    if any(not st.replace("_", "").isalpha() for st in args.ids_status):
        p.error("--ids-status: status names (the store's, e.g. pending, error, timeout)")
    if args.ids_status != ["pending", "running", "error"] and not args.store:
        p.error("--ids-status needs --store (without one every row counts as pending)")
    if args.reduce_over is not None and not args.outputs:
        p.error("--reduce-over needs --outputs (the audit reduces by inputs + outputs)")
    for name in FACTORIES:
        setattr(torch, name, on_meta(getattr(torch, name)))
    sizes: dict[str, int | None] = {}
    codes: dict[str, str] = {}
    for path in args.corpora:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "id" in row:
                    codes[row["id"]] = row.get("reference_code") or ""
                    sizes[row["id"]] = problem_bytes(codes[row["id"]], args.outputs)
    status: dict[str, str] = {}
    if args.store:
        status = dict(sqlite3.connect(args.store).execute("SELECT kernel_id, status FROM kernels"))
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for kernel_id, size in sizes.items():
        s = status.get(kernel_id, "-")
        table[band(size)][s] += 1
    what = "inputs + outputs" if args.outputs else "inputs"
    print(f"{len(sizes)} rows; {what} of one get_inputs() call, by band"
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
                     and status.get(k, "pending") in args.ids_status)
        band_text = f"of at least {args.ids_at_least:g} GiB and " if low else ""
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# {len(ids)} rows with {what} {band_text}under {args.ids_below[0]} GiB"
                    + (f", {' or '.join(args.ids_status)} in {args.store}" if args.store else "")
                    + " (bench/audit/input_sizes.py)\n")
            f.writelines(k + "\n" for k in ids)
        print(f"{len(ids)} ids written to {path}")
    if args.reduce_over is not None:
        reduced_sizes(sizes, codes, status, args)
    return 0


def reduced_sizes(sizes, codes, status, args):
    from kcv.audit import reduced  # noqa: PLC0415
    from kcv.audit.sizing import ShapeRefused, Sized  # noqa: PLC0415

    over = {k: v for k, v in sizes.items() if v is not None and v > args.reduce_over * 2**30}
    bands = ((f"< {args.reduce_to:g} GiB", args.reduce_to * 2**30),
             (f"< {2 * args.reduce_to:g} GiB", 2 * args.reduce_to * 2**30),
             (f"< {args.reduce_over:g} GiB", args.reduce_over * 2**30),
             ("still over", float("inf")))
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    why_not: collections.Counter = collections.Counter()
    for kernel_id, size in sorted(over.items()):
        code = codes[kernel_id]

        def on_meta_device(override, desc, code=code):
            small = problem_bytes(code, args.outputs, override)
            if small is None:
                raise ShapeRefused("not sizeable on the meta device")
            return None, small

        try:
            consts = int_constants(code)
            # Every constant counted as read by get_inputs and none by get_init_inputs: this
            # script sizes rows without the reference worker's facts (an approximation).
            sized = Sized(0, 0, False, consts, list(consts), [])
            _, _, small = reduced.search(sized, size,
                                         int(args.reduce_over * 2**30),
                                         int(args.reduce_to * 2**30), on_meta_device, [],
                                         drop=lambda result: None)
        except reduced.NoReducedShape as e:
            why_not[str(e)] += 1
            continue
        table[next(k for k, lim in bands if small <= lim)][status.get(kernel_id, "-")] += 1
    print(f"{len(over)} rows over {args.reduce_over:g} GiB; reduced shapes aiming at "
          f"{args.reduce_to:g} GiB (kcv.audit.reduced.search), sized again:")
    for key, _ in bands:
        if key not in table:
            continue
        counts = table[key]
        detail = ", ".join(f"{k} {v}" for k, v in counts.most_common())
        print(f"  {key:>12}: {sum(counts.values()):4d}  ({detail})")
    for why, n in why_not.most_common():
        print(f"  no reduced shape: {n:4d}  ({why})")


if __name__ == "__main__":
    raise SystemExit(main())
