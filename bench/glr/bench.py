"""Benchmark of kcv.glr against fla and FlashQLA in the same run: forward and forward+backward
times of GDN, KDA, GLA, SSD (simple GLA), LA and DeltaNet, bf16 inputs, with the achieved
TFLOP/s and HBM bandwidth of every time against the ceilings of the GPU it runs on
(roofline.py), and the speed targets of the GLR work as met / not met from the run's own numbers.

Implementations (columns):
  kcv fp32, kcv bf16  kcv.glr's chunk ops under each precision grade (--grades): the fp32 grade
                      is the ops' default (the CUDA-core kernels); the bf16 grade passes
                      precision="bf16" (the tensor-core kernels where kcv has them), and is "-"
                      when this kcv.glr has no precision keyword.
  fla                 fla's chunk ops (pure Triton, FLA_DISABLE_BACKEND_DISPATCH=1): the anchor
                      of every ratio.
  FlashQLA            flash_qla.chunk_gated_delta_rule (GDN only, K = V = 128), with
                      auto_cp=False (its exact path); "FlashQLA auto-cp" is its default
                      auto_cp=True (intra-card context parallelism from truncated decays, an
                      approximation by design). --flashqla picks them.

Shapes (--shape, a comma list): 1 = B1·T8192·H32·D128, 2 = B4·T4096·H16·D128,
3 = B1·T32768·H32·D128, varlen = 15 sequences of skewed lengths (VARLEN_LENGTHS, 32768 tokens)
passed as cu_seqlens with B = 1, H32·D128, tiny = B1·T256·H2·D32 (the CPU path), or BxTxHxD.
Inputs: glr_cases.make_inputs (l2-normalised bf16 q/k, bf16 v, β and dO, fp32 log-decay g, h0
and dht), the same for every implementation.

Timing: on CUDA, medians of triton.testing.do_bench (at least ~10 calls), after one forward and
one forward+backward call of each implementation (fla's autotuning, FlashQLA's TileLang
compilation); on the CPU (--device cpu), the median of --cpu-reps calls timed with
time.perf_counter, and fla and FlashQLA are skipped (their kernels need the GPU). Prints each
member's rows as soon as they are measured and rewrites the markdown (--out) after every member,
so a run cut short keeps what it measured. ratio = fla time / kcv time (> 1: kcv is faster).

--rounds N (default 1) times every implementation of a member N times, interleaved (kcv, fla,
FlashQLA, then again), and shows the median of the N figures; with N > 1 a table of the spread
(each implementation's lowest and highest figure, and fla / kcv of each round, lowest to
highest) says how far a ratio moves within the run.

fla's cost is its Triton autotuning (every config of every kernel compiled, then timed). Before
timing, --precompile-shards N worker processes per member compile all of fla's configs into
Triton's on-disk cache in parallel (glr_cases.compile_shard_autotune, nothing timed there), as
many at once as the GPU's free memory holds (launch.py: a worker that runs out of memory beside
the others runs again after them, and the report says so); the
timing process then autotunes fla normally, with every config timed under a shorter budget
(--autotune-warmup/--autotune-rep ms instead of Triton's 25/100), and finds every kernel
compiled. FlashQLA's TileLang kernels compile in one more process per --flashqla mode beside
them (TileLang's on-disk cache, which the timing process then reads), so its first call in the
timing process loads instead of compiling.

  PYTHONPATH=/tmp/site python3 bench/glr/bench.py --shape 1,2 --out bench_12.md
  python3 bench/glr/bench.py --device cpu --shape tiny --out /tmp/bench_cpu.md
"""

import argparse
import functools
import inspect
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "glr", "check"))
sys.path.insert(0, HERE)
import glr_cases as gc  # noqa: E402
import launch  # noqa: E402
import roofline as rl  # noqa: E402

#: The varlen batch: 15 sequences, 32768 tokens, skewed (one long, a tail of short ones, lengths
#: that are and are not multiples of the chunk size, one single token).
VARLEN_LENGTHS = [12288, 6144, 4096, 3000, 2048, 1500, 1024, 1000, 700, 513, 300, 100, 37, 17, 1]
SHAPES = {"1": (1, 8192, 32, 128, None), "2": (4, 4096, 16, 128, None),
          "3": (1, 32768, 32, 128, None), "varlen": (1, sum(VARLEN_LENGTHS), 32, 128,
                                                     VARLEN_LENGTHS),
          "tiny": (1, 256, 2, 32, None)}
GRADES = ("fp32", "bf16")
#: The targets (benchmark, not tests): GDN forward+backward at shape 1 under each grade, ms; and
#: fla / kcv forward+backward of every member at the main shapes.
TARGET_GDN_MS = {"bf16": 0.6, "fp32": 1.2}
TARGET_RATIO = 2.0
MAIN_SHAPES = ("1", "2")
FLASHQLA_MODES = {"exact": False, "auto-cp": True}
PASSES = ("fwd", "fwd+bwd")


class Shape:
    """One benchmark shape: B sequences of T tokens, or (lengths) one row of varlen sequences."""

    def __init__(self, name, B, T, H, D, lengths=None):
        self.name, self.B, self.T, self.H, self.D, self.lengths = name, B, T, H, D, lengths
        if lengths is not None:
            assert B == 1 and sum(lengths) == T, (B, T, lengths)
            self.cu = [0]
            for n in lengths:
                self.cu.append(self.cu[-1] + n)
        else:
            self.cu = None
        self.seq_lengths = lengths if lengths is not None else [T] * B
        self.tokens = B * T
        self.seqs = len(self.seq_lengths)
        self.label = (f"varlen B1 T{T} N{self.seqs} H{H} D{D}" if lengths is not None
                      else f"B{B} T{T} H{H} D{D}")


def parse_shape(text):
    if text in SHAPES:
        return Shape(text, *SHAPES[text])
    parts = text.lower().replace("b", "").replace("t", "").replace("h", "").replace("d", "")
    B, T, H, D = (int(v) for v in parts.split("x"))
    return Shape(text, B, T, H, D)


def parse_shapes(text):
    return [parse_shape(s) for s in text.split(",") if s]


def sync(device="cuda"):
    if device == "cuda":
        torch.cuda.synchronize()


def timers(ops, member, x, cu_seqlens=None):
    """(forward closure, forward+backward closure, tensors whose grads to reset)."""
    y = {n: (x[n].detach().clone().requires_grad_() if n in gc.leaves(x) else x[n]) for n in x}
    grads = [y[n] for n in gc.leaves(x)]

    def fwd():
        with torch.no_grad():
            gc.call(ops, member, y, cu_seqlens)

    def fwd_bwd():
        o, ht = gc.call(ops, member, y, cu_seqlens)
        torch.autograd.backward((o, ht), (y["do"], y["dht"]))

    return fwd, fwd_bwd, grads


def warm(fn, grads, device="cuda"):
    """One call (autotuning and compilation happen here); returns its wall time in ms."""
    t0 = time.perf_counter()
    fn()
    sync(device)
    for g in grads:
        g.grad = None
    return (time.perf_counter() - t0) * 1e3


def bench(do_bench, fn, grads, warmup, rep):
    """Median time in ms on CUDA; at least ~10 timed repetitions however long one call is."""
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once = (time.perf_counter() - t0) * 1e3
    return do_bench(fn, warmup=warmup, rep=max(rep, 10 * once), grad_to_none=grads,
                    return_mode="median")


def cpu_bench(fn, grads, reps):
    """Median wall time in ms of `reps` calls (gradients reset before each, outside the timed
    region)."""
    times = []
    for _ in range(max(1, reps)):
        for g in grads:
            g.grad = None
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def measure(do_bench, impl, ops, member, x, cu, args, round_=0):
    """(fwd ms, fwd+bwd ms, None) or (nan, nan, the failure in one line). The first round makes
    the first calls (autotuning, compilation) before timing."""
    fwd, fb, grads = timers(ops, member, x, cu)
    try:
        first = ""
        if round_ == 0:
            t_warm = warm(fwd, grads, args.device) + warm(fb, grads, args.device)
            first = f"first calls {t_warm / 1e3:.1f} s, "
        if args.device == "cuda":
            out = (bench(do_bench, fwd, grads, args.warmup, args.rep),
                   bench(do_bench, fb, grads, args.warmup, args.rep))
        else:
            out = cpu_bench(fwd, grads, args.cpu_reps), cpu_bench(fb, grads, args.cpu_reps)
        tag = f" (round {round_ + 1})" if args.rounds > 1 else ""
        print(f"  {member} {impl}{tag}: {first}fwd {out[0]:.3f} ms, fwd+bwd {out[1]:.3f} ms",
              flush=True)
        return out[0], out[1], None
    except Exception as e:  # noqa: BLE001 - keep going; show the failure in the table
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(f"  {member} {impl} failed: {why}", flush=True)
        return float("nan"), float("nan"), why


# --------------------------------------------------------------------------- implementations


def kcv_precision_support():
    """(whether kcv.glr's chunk ops take `precision`, kcv.glr._precision or None)."""
    import kcv.glr as glr
    takes = "precision" in inspect.signature(glr.chunk_gated_delta_rule).parameters
    try:
        from kcv.glr import _precision
    except ImportError:
        _precision = None
    return takes, _precision


def kcv_path(member, shape, grade, device, prec_mod):
    """The kernels kcv.glr runs for a member under a grade (kcv.glr._precision.chunk_path), or
    None when this kcv.glr does not say."""
    if prec_mod is None:
        return None
    try:
        from kcv.glr import _native
        code = getattr(_native, member.upper())
        return prec_mod.chunk_path(code, shape.D, shape.D, torch.bfloat16,
                                   torch.bfloat16 if member in rl.BETA else None, device, grade)
    except Exception:  # noqa: BLE001 - informational only
        return None


def kcv_ops(grade):
    ops = gc.kcv_ops()
    if grade == "fp32":  # the ops' default: works on a kcv.glr without the keyword too
        return ops
    return {m: functools.partial(f, precision=grade) for m, f in ops.items()}


def implementations(args):
    """([(column, ops or None)] in column order, [notes])."""
    impls, notes = [], []
    takes, prec_mod = kcv_precision_support()
    for grade in args.grades:
        if grade != "fp32" and not takes:
            impls.append((f"kcv {grade}", None))
            notes.append(f"kcv {grade}: not run: this kcv.glr's chunk ops take no `precision` "
                         "keyword (only the fp32 grade).")
            continue
        impls.append((f"kcv {grade}", kcv_ops(grade)))
    if args.device != "cuda":
        impls.append(("fla", None))
        notes.append("fla: not run: --device cpu (fla's kernels are Triton GPU kernels).")
    else:
        try:
            ops, note = gc.load_fla()
            impls.append(("fla", ops))
            notes.append("fla: " + note)
        except Exception as e:  # noqa: BLE001
            impls.append(("fla", None))
            notes.append(f"fla: not run: {type(e).__name__}: {str(e)[:200]}")
    for mode in args.flashqla:
        col = "FlashQLA" if mode == "exact" else f"FlashQLA {mode}"
        if args.device != "cuda":
            impls.append((col, None))
            notes.append(f"{col}: not run: --device cpu (FlashQLA's TileLang kernels need an "
                         "sm90/sm100/sm120 GPU).")
            continue
        try:
            ops, note = gc.load_flash_qla(FLASHQLA_MODES[mode])
        except Exception as e:  # noqa: BLE001 - ImportError (no flash_qla/tilelang), no GPU ...
            impls.append((col, None))
            notes.append(f"{col}: not run: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        impls.append((col, ops))
        notes.append(f"{col}: {note}")
    return impls, notes


def skip_reason(col, ops, member, shape):
    """Why an implementation has no figure for a member at a shape (None: it runs)."""
    if ops is None:
        return "not run (see the notes)"
    if member not in ops:
        return "no such member"
    if col.startswith("FlashQLA") and shape.D != 128:
        return "FlashQLA requires K = V = 128"
    return None


# --------------------------------------------------------------------------- precompilation


def precompile_worker(args):
    """One member, one shard: run fla's forward and forward+backward once with this shard's
    configs at every shape (compiles them into Triton's cache). Nothing is timed. With
    --precompile flashqla:MODE: FlashQLA's GDN in that mode at every shape of K = V = 128 (its
    TileLang kernels compiled into TileLang's on-disk cache, which the timing process reads)."""
    if args.precompile.startswith("flashqla:"):
        try:
            ops, _ = gc.load_flash_qla(FLASHQLA_MODES[args.precompile.split(":", 1)[1]])
        except Exception as e:  # noqa: BLE001 - the timing process reports it in the notes
            print(f"  precompile {args.precompile}: not run: {type(e).__name__}", flush=True)
            return 0
        member, label = "gdn", args.precompile
        shapes = [s for s in parse_shapes(args.shape) if s.D == 128]
    else:
        shard, shards = (int(v) for v in args.shard.split("/"))
        gc.compile_shard_autotune(shard, shards)
        ops, _ = gc.load_fla()
        member, label = args.precompile, f"{args.precompile} shard {args.shard}"
        shapes = parse_shapes(args.shape)
    rc = 0
    for shape in shapes:
        t0 = time.time()
        try:
            x = gc.make_inputs(member, shape.B, shape.T, shape.H, shape.D, seed=3,
                               cu_seqlens=shape.cu)
            cu = None if shape.cu is None else torch.tensor(shape.cu, dtype=torch.int64,
                                                              device="cuda")
            fwd, fb, grads = timers(ops, member, x, cu)
            warm(fwd, grads)
            warm(fb, grads)
            status = "ok"
        except Exception as e:  # noqa: BLE001
            status = f"{type(e).__name__}: {str(e)[:160]}"
            if is_out_of_memory(e):
                rc = launch.OUT_OF_MEMORY_RC
        # The peak this worker's allocator held (launch.estimate_gib is checked against it).
        peak = torch.cuda.max_memory_reserved() / 2**30
        print(f"  precompile {label} {shape.name}: {time.time() - t0:.1f} s, {status}, "
              f"peak {peak:.1f} GiB", flush=True)
        torch.cuda.reset_peak_memory_stats()
        x = fwd = fb = grads = None
        torch.cuda.empty_cache()
    return rc


def is_out_of_memory(e):
    """torch's allocator raises OutOfMemoryError; Triton's launcher a RuntimeError that says so."""
    return isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e)


def precompile(args, members, shapes):
    """All members x shards, and FlashQLA's compilation beside them (one process per mode, when
    GDN is measured), as many at once as the GPU's free memory holds by launch.py's estimates
    (--precompile-gib, default the free memory now less 2 GiB for this process); waits. Returns
    (wall seconds, the sentence for the report)."""
    def gib(member):
        return launch.estimate_gib(max(model(member, s, "fwd+bwd")[1] for s in shapes))

    jobs = []
    for m in members:
        for s in range(args.precompile_shards):
            shard = f"{s}/{args.precompile_shards}"
            jobs.append(launch.Job(f"{m} {shard}", worker_cmd(args, m, shard), gib(m)))
    if "gdn" in members:
        jobs += [launch.Job(f"flashqla:{mode}", worker_cmd(args, f"flashqla:{mode}", "0/1"),
                            gib("gdn")) for mode in args.flashqla]
    budget = args.precompile_gib
    if budget is None:
        free, _ = torch.cuda.mem_get_info()
        budget = max(0.0, free / 2**30 - 2.0)
    wall = launch.run(jobs, budget)
    return wall, (f"{launch.summary(jobs)} under a {budget:.0f} GiB GPU memory budget "
                  f"(each worker's estimate: {launch.ESTIMATE_TEXT})")


def worker_cmd(args, job, shard):
    return [sys.executable, "-u", os.path.abspath(__file__), "--precompile", job, "--shard",
            shard, "--shape", args.shape]


# --------------------------------------------------------------------------- the report


def fmt_ms(v):
    return "-" if v is None else ("failed" if isinstance(v, str) else f"{v:.3f}")


def fmt_ratio(a, b):
    if not isinstance(a, float) or not isinstance(b, float) or not (b > 0) or math.isnan(a):
        return "-"
    return f"{a / b:.2f}"


def cell(results, shape, member, col, pass_):
    """A time (float ms), a failure (str) or None (not run)."""
    r = results.get((shape.name, member, col))
    if r is None:
        return None
    if r[2] is not None:
        return r[2] if not r[2].startswith("skip:") else None
    return r[0] if pass_ == "fwd" else r[1]


def model(member, shape, pass_):
    flop = rl.flops(member, shape.seq_lengths, shape.H, shape.D, shape.D, pass_)
    nbytes = rl.hbm_bytes(member, shape.tokens, shape.seqs, shape.H, shape.D, shape.D, pass_)
    return flop, nbytes


def measured_rows(results, shapes, members, cols):
    """(shape, member, pass) of every row a table shows: the pairs some column measured."""
    for shape in shapes:
        for member in members:
            if any((shape.name, member, c) in results for c in cols):
                for pass_ in PASSES:
                    yield shape, member, pass_


def times_table(results, shapes, members, cols, grades):
    kcv_cols = [f"kcv {g}" for g in grades]
    head = (["shape", "member", "pass"] + cols + [f"fla / {c}" for c in kcv_cols])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for shape, member, pass_ in measured_rows(results, shapes, members, cols):
        vals = [cell(results, shape, member, c, pass_) for c in cols]
        fla = cell(results, shape, member, "fla", pass_)
        ratios = [fmt_ratio(fla, cell(results, shape, member, c, pass_)) for c in kcv_cols]
        lines.append("| " + " | ".join([shape.label, member, pass_]
                                       + [fmt_ms(v) for v in vals] + ratios) + " |")
    return lines


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def combine_rounds(figures):
    """One (fwd, fwd+bwd, failure) from the rounds' figures: the medians, or the first failure."""
    for f in figures:
        if f[2] is not None:
            return f
    return (median([f[0] for f in figures]), median([f[1] for f in figures]), None)


def spread_table(rounds, shapes, members, cols, grades):
    """Per row: each implementation's lowest–highest figure over the rounds, and fla / kcv of
    each round (the same round's two figures), lowest–highest."""
    kcv_cols = [f"kcv {g}" for g in grades]
    head = ["shape", "member", "pass"] + cols + [f"fla / {c}" for c in kcv_cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    idx = {"fwd": 0, "fwd+bwd": 1}
    for shape, member, pass_ in measured_rows(rounds, shapes, members, cols):
        def figs(col):
            r = rounds.get((shape.name, member, col))
            if not r or any(f[2] is not None for f in r):
                return None
            return [f[idx[pass_]] for f in r]
        row = [shape.label, member, pass_]
        for c in cols:
            v = figs(c)
            row.append("-" if v is None else f"{min(v):.3f}–{max(v):.3f}")
        fla = figs("fla")
        for c in kcv_cols:
            v = figs(c)
            if fla is None or v is None or len(v) != len(fla):
                row.append("-")
                continue
            ratios = [a / b for a, b in zip(fla, v) if b > 0]
            row.append(f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def roofline_table(results, shapes, members, cols, ceil):
    head = ["shape", "member", "pass", "GFLOP", "GB"] + cols
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for shape, member, pass_ in measured_rows(results, shapes, members, cols):
        flop, nbytes = model(member, shape, pass_)
        row = [shape.label, member, pass_, f"{flop / 1e9:.4g}", f"{nbytes / 1e9:.4g}"]
        for c in cols:
            v = cell(results, shape, member, c, pass_)
            if not isinstance(v, float) or math.isnan(v):
                row.append("-")
                continue
            tf, gbs, ftf, fbw = rl.achieved(flop, nbytes, v, ceil)
            row.append(f"{tf:.3g} ({100 * ftf:.2g} %) · {gbs:.4g} ({100 * fbw:.2g} %)")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def mark(ok):
    return "-" if ok is None else ("met" if ok else "not met")


def targets_table(results, shapes, members, grades):
    """The targets whose shape this run measured; and a line naming those it did not."""
    by_name = {s.name: s for s in shapes}
    lines = ["| target | shape | kcv | fla (anchor) | fla / kcv | bound | met |",
             "|---|---|---|---|---|---|---|"]
    missing = []
    s1 = by_name.get("1")
    for grade in grades:
        col = f"kcv {grade}"
        bound = TARGET_GDN_MS.get(grade)
        if bound is None:
            continue
        if s1 is None or "gdn" not in members:
            missing.append(f"GDN fwd+bwd ≤ {bound} ms ({grade} grade, shape 1)")
            continue
        v = cell(results, s1, "gdn", col, "fwd+bwd")
        fla = cell(results, s1, "gdn", "fla", "fwd+bwd")
        ok = (v <= bound) if isinstance(v, float) and not math.isnan(v) else None
        lines.append(f"| GDN fwd+bwd, {grade} grade | {s1.label} | {fmt_ms(v)} ms | "
                     f"{fmt_ms(fla)} ms | {fmt_ratio(fla, v)} | ≤ {bound} ms | {mark(ok)} |")
    for name in MAIN_SHAPES:
        shape = by_name.get(name)
        if shape is None:
            missing.append(f"fla / kcv fwd+bwd ≥ {TARGET_RATIO:g} at shape {name}")
            continue
        for grade in grades:
            col = f"kcv {grade}"
            for member in members:
                v = cell(results, shape, member, col, "fwd+bwd")
                fla = cell(results, shape, member, "fla", "fwd+bwd")
                ok = None
                if isinstance(v, float) and isinstance(fla, float) and v > 0 \
                        and not math.isnan(fla):
                    ok = fla / v >= TARGET_RATIO
                lines.append(f"| {member} fwd+bwd, {grade} grade, ≥ {TARGET_RATIO:g}x fla | "
                             f"{shape.label} | {fmt_ms(v)} ms | {fmt_ms(fla)} ms | "
                             f"{fmt_ratio(fla, v)} | ≥ {TARGET_RATIO:g} | {mark(ok)} |")
    tail = ([f"Not measured in this run (its shape was not run): {'; '.join(missing)}."]
            if missing else [])
    return lines, tail


def render(args, shapes, members, cols, header, results, failures, done, t_start, rounds=None):
    ceil = args.ceilings
    lines = list(header)
    lines += ["## Times (ms)", ""] + times_table(results, shapes, members, cols, args.grades)
    if args.rounds > 1:
        lines += ["", f"## Spread over {args.rounds} rounds", "",
                  "Each implementation's lowest–highest figure (ms) over the rounds, timed "
                  "interleaved; fla / kcv of each round from that round's two figures, "
                  "lowest–highest. The table above shows the medians.", ""]
        lines += spread_table(rounds or {}, shapes, members, cols, args.grades)
    lines += ["", "## Achieved throughput", "",
              f"Each cell: TFLOP/s (% of the {ceil.name}'s dense BF16 tensor-core "
              f"{ceil.bf16_dense_tflops:g} TFLOP/s) · GB/s (% of its {ceil.hbm_tbps:g} TB/s "
              f"{ceil.memory}), from the model FLOPs and minimum HBM bytes of "
              "bench/glr/roofline.py (chunk 64; docs/glr/bench.md, \"FLOP and byte model\") and "
              f"the times above. Ceilings: NVIDIA's {ceil.name} datasheet.", ""]
    lines += roofline_table(results, shapes, members, cols, ceil)
    tgt, tail = targets_table(results, shapes, members, args.grades)
    lines += ["", "## Targets", "",
              f"Benchmark targets, not tests: GDN fwd+bwd at shape 1 ≤ {TARGET_GDN_MS['bf16']} "
              f"ms under the bf16 grade and ≤ {TARGET_GDN_MS['fp32']} ms under the fp32 grade; "
              f"every member's fwd+bwd at least {TARGET_RATIO:g}x fla's (fla / kcv ≥ "
              f"{TARGET_RATIO:g}) at shapes 1 and 2. From this run's own numbers.", ""]
    lines += (tgt + ([""] + tail if tail else [])) if len(tgt) > 2 else tail
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    if done:
        lines += ["", f"Total {time.time() - t_start:.0f} s."]
    return lines


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1",
                    help="comma list of 1, 2, 3, varlen, tiny or BxTxHxD (e.g. 1x8192x32x128)")
    ap.add_argument("--out", default="bench.md")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--grades", default="fp32,bf16", help="kcv's precision grades (columns)")
    ap.add_argument("--flashqla", default="exact,auto-cp",
                    help="FlashQLA's modes (exact: auto_cp=False; auto-cp: its default), or off")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench rep, ms (at least 10 calls)")
    ap.add_argument("--cpu-reps", type=int, default=3, help="timed calls per figure on the CPU")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every implementation this many times, interleaved; medians shown")
    ap.add_argument("--members", default=",".join(gc.MEMBERS))
    ap.add_argument("--precompile-shards", type=int, default=3,
                    help="processes per member compiling fla's configs first (0: none)")
    ap.add_argument("--autotune-warmup", type=int, default=5, help="ms per config")
    ap.add_argument("--autotune-rep", type=int, default=20, help="ms per config")
    ap.add_argument("--precompile-gib", type=float, default=None,
                    help="GPU memory the precompilation workers may hold at once, GiB "
                         "(default: the free memory less 2 GiB)")
    ap.add_argument("--precompile", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.precompile:
        return precompile_worker(args)
    if args.rounds < 1:
        ap.error("--rounds: at least 1")
    args.grades = [g for g in args.grades.split(",") if g]
    bad = [g for g in args.grades if g not in GRADES]
    if bad:
        ap.error(f"--grades: {bad[0]!r} is not one of {', '.join(GRADES)}")
    args.flashqla = [] if args.flashqla == "off" else [m for m in args.flashqla.split(",") if m]
    bad = [m for m in args.flashqla if m not in FLASHQLA_MODES]
    if bad:
        ap.error(f"--flashqla: {bad[0]!r} is not one of {', '.join(FLASHQLA_MODES)} or off")

    members = args.members.split(",")
    shapes = parse_shapes(args.shape)
    t_start = time.time()
    pre = ""
    do_bench = None
    if args.device == "cuda":
        if args.precompile_shards > 0:
            wall, how = precompile(args, members, shapes)
            pre = (f"fla's configs precompiled by {args.precompile_shards} processes per member "
                   f"in parallel ({wall:.0f} s, nothing timed there; {how}). ")
            print(f"precompile: {wall:.0f} s", flush=True)
        do_bench = gc.quick_autotune_bench(args.autotune_warmup, args.autotune_rep)
        pre += (f"fla's autotuners timed every config with warmup {args.autotune_warmup} ms / "
                f"rep {args.autotune_rep} ms (Triton's default 25/100) and kept the fastest.")
        dev = torch.cuda.get_device_name()
        args.ceilings = rl.ceilings_of(dev)
        timing = (f"Times in ms: medians of triton.testing.do_bench (warmup {args.warmup} ms, "
                  f"rep max({args.rep} ms, 10 calls))")
        if args.rounds > 1:
            timing += f", the median of {args.rounds} such figures timed interleaved"
    else:
        dev = "CPU (kcv.glr's fp64 CPU path)"
        args.ceilings = rl.H200
        timing = f"Times in ms: medians of {args.cpu_reps} calls timed with time.perf_counter"
        if args.rounds > 1:
            timing += f", the median of {args.rounds} such figures timed interleaved"
    impls, notes = implementations(args)
    cols = [c for c, _ in impls]
    _, prec_mod = kcv_precision_support()
    paths = []
    for grade in args.grades:
        got = {m: kcv_path(m, shapes[0], grade, args.device, prec_mod) for m in members}
        if any(got.values()):
            groups = {}
            for m, p in got.items():
                groups.setdefault(p or "?", []).append(m)
            paths.append(f"kcv {grade}: " + ", ".join(
                f"{p.replace('_', '-')} ({' '.join(ms)})" for p, ms in groups.items()))
    varlen = [s for s in shapes if s.lengths is not None]
    header = [f"# kcv.glr vs fla and FlashQLA: forward and forward+backward, bf16 inputs, {dev}",
              "", f"Command: `python3 bench/glr/bench.py {' '.join(sys.argv[1:])}`", "",
              timing + ", after one forward and one forward+backward call of each "
              "implementation (fla's autotuning, FlashQLA's compilation). ratio = fla / kcv "
              "(> 1: kcv faster). \"-\": not run (the notes say why).", ""]
    header += [f"- {n}" for n in notes]
    if paths:
        header += [f"- kernels (kcv.glr._precision.chunk_path at {shapes[0].label}): "
                   + "; ".join(paths)]
    if any(c.startswith("FlashQLA") for c in cols):
        header += ["- FlashQLA conventions: the same as fla's (q, k [B, T, H, K], v [B, T, HV, "
                   "V], g the per-token log-space decay [B, T, HV] in fp32, β after the sigmoid, "
                   "h0 and the final state fp32 [N, HV, K, V]); passed explicitly: scale = K^-0.5, "
                   "state_v_first=False, use_qk_l2norm_in_kernel=False (q and k arrive "
                   "normalised); nothing converted."]
    for s in varlen:
        header += [f"- {s.label}: B = 1 with cu_seqlens {s.cu} (lengths {s.lengths})."]
    if pre:
        header += [f"- {pre}"]
    header += [""]
    write(args.out, render(args, shapes, members, cols, header, {}, [], False, t_start))
    results, failures, rounds = {}, [], {}
    for shape in shapes:
        cu = None if shape.cu is None else torch.tensor(shape.cu, dtype=torch.int64,
                                                          device=args.device)
        for member in members:
            t0 = time.time()
            x = gc.make_inputs(member, shape.B, shape.T, shape.H, shape.D, seed=3,
                               device=args.device, cu_seqlens=shape.cu)
            for round_ in range(args.rounds):
                for col, ops in impls:
                    key = (shape.name, member, col)
                    why = skip_reason(col, ops, member, shape)
                    if why is not None:
                        results[key] = (None, None, f"skip: {why}")
                        continue
                    if round_ > 0 and rounds[key][-1][2] is not None:
                        continue  # failed in an earlier round: not timed again
                    got = measure(do_bench, col, ops, member, x, cu, args, round_)
                    rounds.setdefault(key, []).append(got)
                    results[key] = combine_rounds(rounds[key])
                    if got[2]:
                        failures.append(f"{shape.label} {member} {col}: {got[2]}")
            for line in times_table(results, [shape], [member], cols, args.grades)[2:]:
                print(line + f"   [{time.time() - t0:.0f} s]", flush=True)
            write(args.out, render(args, shapes, members, cols, header, results, failures,
                                   False, t_start, rounds))
            del x
            if args.device == "cuda":
                torch.cuda.empty_cache()
    lines = render(args, shapes, members, cols, header, results, failures, True, t_start, rounds)
    write(args.out, lines)
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
