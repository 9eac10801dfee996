"""Where a GLR forward+backward spends its time, kernel by kernel, from Nsight Compute's hardware
counters: kcv.glr's bf16 grade (the tensor-core kernels), fla and FlashQLA at one shape.

Two modes.

  --target IMPL   (run under ncu) one forward+backward of IMPL (kcv-bf16, kcv-fp32, fla,
                  flashqla) at --shape for --member, after two unprofiled warm-up calls
                  (fla's autotuning, FlashQLA's compilation); only the third call lies between
                  torch.cuda.profiler.start() and stop(), so `ncu --profile-from-start off`
                  measures exactly one step.
  (default)       runs ncu once per implementation of --impls on that target, each into its own
                  CSV under --work, and writes the markdown table (--out): per kernel launch its
                  duration, the fractions of the SM's and the memory system's peak it reached
                  (SpeedOfLight), DRAM bandwidth, tensor-pipe activity, achieved occupancy,
                  registers, shared memory, and the two largest warp-stall reasons per issued
                  instruction. Metrics this ncu does not know are left out and named in the notes.

ncu runs with --clock-control none (the GPU's own clocks, as every other figure of bench/glr) and
replays each kernel once per pass of its metric groups, so the durations are of one replay, not
of the timed benchmark; bench.py gives those.

  PYTHONPATH=/tmp/site python3 bench/glr/ncu_profile.py --member gdn --shape 1 \\
      --impls kcv-bf16,fla,flashqla --out ncu_gdn.md

--member takes several members joined by commas (`--member kda,gla`), one section per member and
implementation in the same table file.
"""

import argparse
import csv
import io
import re
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

#: Metrics, in table order: (ncu metric, column, how to show it). Each is asked for only when
#: `ncu --query-metrics` lists its base name.
METRICS = [
    ("gpu__time_duration.sum", "µs", "us"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %", "pct"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "mem %", "pct"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %", "pct"),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 %", "pct"),
    ("l1tex__throughput.avg.pct_of_peak_sustained_active", "L1 %", "pct"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor %",
     "pct"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy %", "pct"),
    ("launch__registers_per_thread", "regs", "int"),
    ("launch__shared_mem_per_block", "smem KB", "kb"),
    ("launch__grid_size", "CTAs", "int"),
    ("launch__block_size", "threads", "int"),
]
#: Warp-stall reasons (cycles a warp waits per issued instruction); the two largest are shown.
STALLS = ["long_scoreboard", "short_scoreboard", "barrier", "mio_throttle", "math_pipe_throttle",
          "wait", "lg_throttle", "not_selected", "dispatch_stall", "membar", "tex_throttle",
          "drain", "sleeping", "selected", "branch_resolving", "no_instruction", "imc_miss",
          "misc"]
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
IMPLS = ("kcv-bf16", "kcv-fp32", "fla", "flashqla")


# --------------------------------------------------------------------------- the target


def run_target(args):
    import torch

    sys.path.insert(0, HERE)
    import bench  # noqa: E402 - the benchmark's shapes, inputs and closures
    gc = bench.gc
    shape = bench.parse_shape(args.shape)
    if args.target.startswith("kcv-"):
        ops = bench.kcv_ops(args.target[4:])
    elif args.target == "fla":
        ops, _ = gc.load_fla()
    else:
        ops, _ = gc.load_flash_qla(False)  # its exact path (auto_cp=False)
    x = gc.make_inputs(args.member, shape.B, shape.T, shape.H, shape.D, seed=3,
                       cu_seqlens=shape.cu)
    cu = None if shape.cu is None else torch.tensor(shape.cu, dtype=torch.int64, device="cuda")
    _, fb, grads = bench.timers(ops, args.member, x, cu)
    for _ in range(2):
        bench.warm(fb, grads)
    torch.cuda.profiler.start()
    fb()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{args.target}: one forward+backward profiled", flush=True)
    return 0


# --------------------------------------------------------------------------- ncu and its CSV


def known_metrics(ncu):
    """The base names `ncu --query-metrics` lists for this GPU (the first word of each of its
    lines that looks like a metric name), plus the launch__ metrics, which it does not list."""
    out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True,
                         timeout=120).stdout
    names = {m for m, _, _ in METRICS if m.startswith("launch__")}
    for line in out.splitlines():
        word = line.strip().split(" ")[0] if line.strip() else ""
        if re.fullmatch(r"[a-z0-9_]+__[a-z0-9_]+", word):
            names.add(word)
    return names


def base_name(metric):
    """ncu's base name of a metric with its rollup and submetric: sm__throughput.avg.pct_... ->
    sm__throughput."""
    return metric.split(".")[0]


def profile(args, impl, metrics, csv_path):
    cmd = [args.ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv",
           "--page", "raw", "--metrics", ",".join(metrics), sys.executable, "-u",
           os.path.abspath(__file__), "--target", impl, "--member", args.member, "--shape",
           args.shape]
    t0 = time.time()
    # on a timeout the other implementations' tables still come out
    rc, stdout, stderr = run_ncu(cmd, args.timeout)
    with open(csv_path, "w", encoding="utf-8") as f:
        f.write(stdout)
    with open(csv_path + ".log", "w", encoding="utf-8") as f:
        f.write(" ".join(cmd) + "\n" + stderr)
    print(f"{impl}: ncu exit {rc} in {time.time() - t0:.0f} s", flush=True)
    return rc


#: profile()'s exit status for an implementation that ran past --timeout (timeout(1)'s).
TIMED_OUT = 124


def run_ncu(cmd, timeout):
    """(exit status, stdout, stderr) of ncu's `cmd`, run in a process group of its own so that a
    timeout stops the profiled process with it (killing ncu alone would leave it on the GPU
    beside the next profile): TIMED_OUT after `timeout` s, with what it had printed and a line
    saying so."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stdout or "", stderr or ""
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        return (TIMED_OUT, _text(stdout),
                _text(stderr) + f"\nncu: out of time after {timeout} s (--timeout)\n")


def _text(out):
    """What a timed-out subprocess had printed: bytes, str or None."""
    if out is None:
        return ""
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


def read_rows(csv_path):
    """[{column: value}] of the kernel launches in an ncu --csv --page raw output (its first
    lines are the target's own prints; the header row starts with "ID")."""
    with open(csv_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    rows = [r for r in reader]
    return [r for r in rows if r.get("ID", "").strip().isdigit()]  # the units row has no ID


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def show(value, how):
    v = number(value)
    if v is None:
        return "-"
    if how == "us":
        return f"{v / 1e3:.1f}"  # ncu reports gpu__time_duration in ns
    if how == "pct":
        return f"{v:.0f}"
    if how == "kb":
        return f"{v / 1024:.0f}"
    return f"{v:.0f}"


def short_name(name, width=48):
    name = name.replace("void ", "").strip()
    if name.endswith(")"):  # drop the parameter list, the last balanced (...)
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    for prefix in ("kcv::glr::dev::", "kcv::glr::", "flash_qla::"):
        name = name.replace(prefix, "")
    return name if len(name) <= width else name[: width - 1] + "…"


def table(title, rows, metrics):
    cols = [c for m, c, _ in METRICS if m in metrics]
    lines = [f"### {title}", "", "| kernel | " + " | ".join(cols) + " | top stalls (cycles per "
             "issue) |", "|---|" + "---|" * (len(cols) + 1)]
    total = 0.0
    for r in rows:
        cells = [show(r.get(m), how) for m, _, how in METRICS if m in metrics]
        total += number(r.get("gpu__time_duration.sum")) or 0.0
        stalls = sorted(((number(r.get(STALL_METRIC.format(s))) or 0.0, s) for s in STALLS
                         if STALL_METRIC.format(s) in metrics), reverse=True)[:2]
        top = ", ".join(f"{s} {v:.1f}" for v, s in stalls if v > 0) or "-"
        lines.append(f"| `{short_name(r.get('Kernel Name', '?'))}` | " + " | ".join(cells)
                     + f" | {top} |")
    lines += ["", f"{len(rows)} launches, {total / 1e3:.1f} µs summed (one replay each).", ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--member", default="gdn",
                    help="a member, or several joined by commas (one section each)")
    ap.add_argument("--shape", default="1")
    ap.add_argument("--impls", default="kcv-bf16,fla,flashqla")
    ap.add_argument("--out", default="ncu.md")
    ap.add_argument("--work", default=None, help="folder of the raw CSVs (default: beside --out)")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per implementation")
    ap.add_argument("--target", choices=IMPLS, default=None)
    args = ap.parse_args()
    if args.target:
        return run_target(args)
    impls = [i for i in args.impls.split(",") if i]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        ap.error(f"--impls: {bad[0]!r} is not one of {', '.join(IMPLS)}")
    work = args.work or os.path.join(os.path.dirname(os.path.abspath(args.out)), "ncu")
    os.makedirs(work, exist_ok=True)
    known = known_metrics(args.ncu)
    wanted = [m for m, _, _ in METRICS] + [STALL_METRIC.format(s) for s in STALLS]
    metrics = [m for m in wanted if base_name(m) in known or m in known]
    missing = [m for m in wanted if m not in metrics]
    sys.path.insert(0, HERE)
    from bench import parse_shape  # noqa: E402
    label = parse_shape(args.shape).label
    members = [m for m in args.member.split(",") if m]
    lines = [f"# Nsight Compute: {', '.join(members)} forward+backward at {label}, one step", "",
             f"Command: `python3 bench/glr/ncu_profile.py {' '.join(sys.argv[1:])}`", "",
             "Each kernel launch of one forward+backward (after two unprofiled warm-up calls), "
             "replayed by ncu once per metric pass with --clock-control none. µs: one replay's "
             "duration. SM %, mem %, DRAM %, L2 %: fractions of the peak sustained rate over the "
             "kernel's elapsed cycles (ncu's SpeedOfLight; mem % is the largest of the memory "
             "units', L2 % the L2 slices'); L1 %: the L1/shared-memory unit's over its active "
             "cycles (shared-memory loads, ldmatrix and cp.async land there); tensor %: the tensor pipe's active "
             "cycles over the SM's active cycles (sm__pipe_tensor_op_hmma_cycles_active); occupancy %: active warps of the "
             "maximum; top stalls: the two largest warp-stall reasons in cycles per issued "
             "instruction.", ""]
    if missing:
        lines += [f"- metrics this ncu does not list, left out: {', '.join(missing)}", ""]
    for member in members:
        args.member = member  # the target run's member (profile() passes it on)
        for impl in impls:
            title = impl if len(members) == 1 else f"{member} · {impl}"
            path = os.path.join(work, f"{member}_{impl}.csv")
            rc = profile(args, impl, metrics, path)
            rows = read_rows(path)
            if rc != 0 or not rows:
                with open(path + ".log", encoding="utf-8") as f:
                    tail = f.read().strip().splitlines()[-3:]
                lines += [f"### {title}", "", f"not profiled: ncu exit {rc}, {len(rows)} launches; "
                          + " / ".join(t.strip()[:200] for t in tail), ""]
                continue
            lines += table(title, rows, metrics)
            with open(args.out, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
