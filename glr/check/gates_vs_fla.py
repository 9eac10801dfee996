"""kcv.glr's sm_90a kernels beside fla v0.5 and FlashQLA, judged by kcv's C++ judges (issue 4
item 5). The gates of our kernels (CMP-01 over the full case list, ORD-02, EXC-01, RES-02, with
shrinking and `kcv replay`) run through kcv's pipeline: `kcv verify --candidate
libkcv_glr_cuda_candidate.so` (glr/check/device_run.sh, step `pipeline`; docs/glr/verification.md).
This script adds what needs Python: fla's and FlashQLA's outputs on the same inputs. For every
member (gdn, kda, gla, ssd, la, deltanet) and every case of the shape set (T in {1, 63, 64, 65, 1000, 8192},
D in {64, 100, 128}, GVA, varlen), on the same bf16 inputs:

- CMP-01 of ours at both grades (kcv.glr's default, the fp32 grade's CUDA-core kernels, and
  precision="bf16", the tensor-core kernels where they take the call), fla and FlashQLA (GDN
  with K = V = 128, when flash_qla imports) against the fp64 chunked reference (kcv.glr on CPU
  float64 copies of the inputs), every element of o, ht, dq, dk, dv, dg, dbeta, dh0 within tau of
  kcv's GLR error model (error_model.py over kcv._glr), under both precision contracts: fp32
  (every output) and bf16 (whose bounds carry the declared roundings' term on every output);
  the report says which contract each implementation meets. The judge is
  kcv._core.judge, the C++ CMP-01 judge;
- fla's metric (relative RMS against the same reference, fla's limits) for ours and for fla;
- the resource report of every kernel (cuobjdump -res-usage of the installed kcv/_glr module).

Each member runs in --split worker processes (its cases divided by head dim), --jobs at once,
each printing one line per case as it finishes; the parent writes the markdown report (--out)
and exits 1 when CMP-01 or fla's metric fails for ours (a contract that fla or FlashQLA does not
meet is a finding, not a failure). --device cpu runs end to end without a GPU: 'ours' is then
kcv.glr's CPU path (fp64, cast to the output dtypes) and fla and FlashQLA are skipped.

  PYTHONPATH=/tmp/site python3 glr/check/gates_vs_fla.py --out verification.md
  python3 glr/check/gates_vs_fla.py --device cpu --cases t1-d64-b2,t65-d64-gva --out /tmp/v.md
"""

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# name, B, T, H (q/k heads), HV (value heads), K, V, varlen lengths (None: fixed length)
CASES = [
    ("t1-d64-b2", 2, 1, 2, 2, 64, 64, None),
    ("t63-d100", 1, 63, 2, 2, 100, 100, None),
    ("t64-d128-b2", 2, 64, 2, 2, 128, 128, None),
    ("t65-d64-gva", 1, 65, 2, 4, 64, 64, None),
    ("t1000-d100", 1, 1000, 2, 2, 100, 100, None),
    ("varlen-d128-gva", 1, None, 2, 4, 128, 128, [1, 150, 7, 64, 3, 1000, 65, 257]),
    ("t8192-d128", 1, 8192, 2, 2, 128, 128, None),
]
# fla ops that take the head count from q/k only (no value-head groups); fla 0.6.0's
# chunk_delta_rule too: given GVA inputs it writes past its outputs (NaN in a neighbouring
# allocation, an illegal address at T = 1547).
FLA_NO_GVA = {"gla": "chunk_gla", "ssd": "chunk_simple_gla", "la": "chunk_linear_attn",
              "deltanet": "chunk_delta_rule"}
OUTPUTS = ("o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0")
SEED = 7


def cu_of(lengths):
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return cu


# --------------------------------------------------------------------------- one member (worker)


def _log(member, text):
    print(f"[{member}] {text}", flush=True)


def _summ(d):
    """The few fields of a judge result the report needs."""
    return {k: d.get(k) for k in ("verdict", "summary", "worst_ratio", "output", "worst_index",
                                  "violations", "reason")}


def _reference(member, x, cu):
    """fp64 chunked reference on CPU float64 copies, and the bf16 grade's declared-rounding sigma
    of o, ht and the gradients (kcv._glr releases the GIL)."""
    import torch
    import error_model as em
    import glr_cases as gc
    cpu = {n: (None if t is None else t.detach().double().cpu()) for n, t in x.items()}
    cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int64)
    sigma = em.declared_sigma(member, cpu, cu, "bf16")
    sigma.update(em.declared_backward_sigma(member, cpu, cu, "bf16") or {})
    return gc.fwd_bwd(gc.kcv_ops(), member, cpu, cu_t), sigma


def _dims(case):
    name, B, T, H, HV, K, V, lengths = case
    cu = None if lengths is None else cu_of(lengths)
    T = T if cu is None else cu[-1]
    L = T if cu is None else max(lengths)
    return name, B, T, H, HV, K, V, cu, L


def _output_dtype(name):
    import error_model as em
    return em.OUT_DTYPE[name]


def _contracts(outputs, ref, taus, names, label):
    """CMP-01 of one implementation's outputs under each grade: {grade: {verdict, worst_ratio,
    output_name, ratio per output, judged outputs}}. The arrays are read in the implementation's
    own dtypes; tau counts the interface's output rounding (error_model.OUT_DTYPE)."""
    import gate_judge as gj
    res = {}
    for grade, tau in taus.items():
        judged = [n for n in names if n in tau and n in outputs]
        ents = [gj.oracle_entry(gj.DTYPES[outputs[n].dtype], ref[n], tau[n]) for n in judged]
        arrays = [gj.to_array(outputs[n]) for n in judged]
        r = gj.judge("CMP-01", [arrays], ents, [], label=f"{label} {grade}")
        ratio = {n: gj.judge("CMP-01", [[a]], [e], [], label=n)["worst_ratio"]
                 for n, a, e in zip(judged, arrays, ents)}
        res[grade] = {"verdict": r["verdict"], "worst_ratio": r["worst_ratio"],
                      "output_name": judged[r["output"]] if judged else None, "ratio": ratio,
                      "outputs": judged,
                      "dtypes": {n: gj.DTYPES[outputs[n].dtype] for n in judged
                                 if gj.DTYPES[outputs[n].dtype] != _output_dtype(n)}}
    return res


def _case_inputs(member, case, device):
    import glr_cases as gc
    name, B, T, H, HV, K, V, cu, L = _dims(case)
    return gc.make_inputs(member, B, T, H, K, seed=SEED, device=device, cu_seqlens=cu, HV=HV, V=V)


def _to_host(outputs):
    """An implementation's outputs copied to host memory as soon as it returns: a later
    implementation that writes out of bounds on the device cannot change what is judged."""
    return {n: t.detach().cpu() for n, t in outputs.items() if t is not None}


def _other(ops, member, x, cu_dev, shapes):
    """Forward + backward of fla or FlashQLA: (outputs or None, error or None, seconds)."""
    import glr_cases as gc
    t1 = time.time()
    try:
        theirs = _to_host(gc.fwd_bwd(ops, member, x, cu_dev))
        bad = [n for n in shapes if n in theirs and theirs[n].shape != shapes[n]]
        if bad:
            raise ValueError(f"returned {bad[0]} of shape {tuple(theirs[bad[0]].shape)}, "
                             f"ours {tuple(shapes[bad[0]])}")
        return theirs, None, time.time() - t1
    except Exception as e:  # noqa: BLE001 - record the failure, keep going
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}", time.time() - t1


def _flashqla_skip(member, K, V, fq_ops):
    """Why FlashQLA does not run on a case (None: it runs)."""
    if fq_ops is None:
        return "not run: FlashQLA not available (see the note)"
    if member != "gdn":
        return "not run: FlashQLA implements GDN only"
    if K != 128 or V != 128:
        return "not run: FlashQLA requires K = V = 128"
    return None


def _run_case(member, case, x, ref_future, ours, ours_bf16, fla_ops, device, state,
              fq_ops=None):
    import torch
    import error_model as em
    import gate_judge as gj
    import glr_cases as gc
    name, B, T, H, HV, K, V, cu, L = _dims(case)
    cu_dev = None if cu is None else torch.tensor(cu, dtype=torch.int64, device=device)
    row = {"case": name, "shape": f"B{B} T{T} H{H}/{HV} K{K} V{V}" +
           (f" cu={cu}" if cu is not None else "")}
    # The inputs as the judge reads them, taken before any implementation runs.
    inputs = [(n, gj.to_array(x[n])) for n in ("q", "k", "v", "g", "beta", "h0", "do", "dht")
              if x[n] is not None]
    t0 = time.time()
    y = gc.fwd_bwd(ours, member, x, cu_dev)
    calls = [_to_host({n: y[n] for n in OUTPUTS if n in y})]
    row["ours_s"] = time.time() - t0
    # ours under the bf16 grade: the tensor-core kernels where they take the call
    from kcv.glr import _launch
    before = _launch.PATHS.copy()
    y16 = gc.fwd_bwd(ours_bf16, member, x, cu_dev)
    ours16 = _to_host({n: y16[n] for n in OUTPUTS if n in y16})
    row["ours_bf16_path"] = ",".join(sorted({p for (_, p) in _launch.PATHS - before}))
    theirs, row["fla_error"] = None, None
    skip_fla = None
    if fla_ops is not None and HV != H and member in FLA_NO_GVA:
        skip_fla = (f"not run: fla's {FLA_NO_GVA[member]} has no GVA (it takes the head count "
                    "from q/k and would read v, g and the state with the wrong head stride)")
    row["fla_skipped"] = skip_fla
    shapes = {n: t.shape for n, t in calls[0].items()}
    if skip_fla is None and fla_ops is not None and \
            (not state.get("fla_cases") or name in state["fla_cases"]):
        theirs, row["fla_error"], row["fla_s"] = _other(fla_ops, member, x, cu_dev, shapes)
        if not state.get("fla_first_done"):
            state["fla_first_done"] = True
            _log(member, f"first fla call (compiles its kernels): {row['fla_s']:.1f} s")
    fq, row["flashqla_error"] = None, None
    row["flashqla_skipped"] = _flashqla_skip(member, K, V, fq_ops)
    if row["flashqla_skipped"] is None:
        fq, row["flashqla_error"], row["flashqla_s"] = _other(fq_ops, member, x, cu_dev, shapes)
    t2 = time.time()
    ref, sigma = ref_future.result()
    row["ref_wait_s"] = time.time() - t2
    model = em.case(x, cu)
    row["model"] = em.describe(model)
    names = [n for n in OUTPUTS if n in ref]
    terms = {"dg": em.dg_terms(member, x, cu)[0]} if "dg" in ref else {}
    taus = {n: em.tau(ref[n], n, model, terms.get(n)) for n in names}
    grade_taus = {"fp32": taus,
                  "bf16": {n: em.tau(ref[n], n, model, terms.get(n), sigma=sigma[n])
                           for n in sigma if n in ref}}
    oracle = [gj.oracle_entry(_output_dtype(n), ref[n], taus[n]) for n in names]
    arrays = [[gj.to_array(c[n]) for n in names] for c in calls]
    cmp = gj.judge("CMP-01", arrays[:1], oracle, inputs, label=f"{member} {name}")
    cmp["output_name"] = names[cmp["output"]] if cmp.get("output") is not None else None
    row["cmp01"] = _summ(cmp) | {"output_name": cmp["output_name"]}
    # worst tau-ratio per output (for the table)
    row["ratio"] = {}
    for i, n in enumerate(names):
        r = gj.judge("CMP-01", [arrays[0][i:i + 1]], oracle[i:i + 1], [], label=n)
        row["ratio"][n] = r.get("worst_ratio")
    row["contracts"] = {"ours": _contracts(calls[0], ref, grade_taus, names, f"{member} {name}"),
                        "ours_bf16": _contracts(ours16, ref, grade_taus, names,
                                                f"{member} bf16 {name}")}
    if theirs is not None:
        row["contracts"]["fla"] = _contracts(theirs, ref, grade_taus, names, f"fla {name}")
    if fq is not None:
        row["contracts"]["flashqla"] = _contracts(fq, ref, grade_taus, names, f"flashqla {name}")
    row["metric"] = {}
    for n in names:
        e_ours = gc.err_ratio(ref[n], calls[0][n])
        e_fla = None
        if theirs is not None and n in theirs:
            e_fla = gc.err_ratio(ref[n], theirs[n])
        row["metric"][n] = {"ours": e_ours, "fla": e_fla, "limit": gc.LIMITS[n],
                            "ok": e_ours <= gc.LIMITS[n]}
    return row


def worker(args):
    import torch
    import glr_cases as gc
    member = args.worker
    torch.set_num_threads(max(1, args.torch_threads))
    device = args.device
    result = {"member": member, "rows": [], "errors": []}

    def save():  # after every step, so a parent that stops us at its deadline keeps the rows
        tmp = args.result + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, default=float)
        os.replace(tmp, args.result)

    fla_ops = None
    if device == "cuda" and args.fla != "off":
        t0 = time.time()
        try:
            fla_ops, result["fla_note"] = gc.load_fla(first_fit=args.fla == "first-fit")
        except Exception as e:  # noqa: BLE001
            result["fla_note"] = f"fla not available: {type(e).__name__}: {e}"
        _log(member, f"fla import: {time.time() - t0:.1f} s")
    else:
        result["fla_note"] = "fla not run (--device cpu or --fla off)"
    fq_ops = None
    if device == "cuda" and args.flashqla != "off" and member == "gdn":
        try:
            fq_ops, result["flashqla_note"] = gc.load_flash_qla(args.flashqla == "auto-cp")
        except Exception as e:  # noqa: BLE001
            result["flashqla_note"] = f"FlashQLA not available: {type(e).__name__}: {e}"
    else:
        result["flashqla_note"] = ("FlashQLA not run (--device cpu, --flashqla off, or a member "
                                   "other than gdn)")
    save()
    ours = gc.kcv_ops()
    ours_bf16 = {m: functools.partial(op, precision="bf16") for m, op in ours.items()}
    state = {"fla_cases": [c for c in args.fla_cases.split(",") if c]}
    wanted = args.cases.split(",") if args.cases else None
    cases = [c for c in CASES if not wanted or c[0] in wanted]
    with ThreadPoolExecutor(max_workers=max(1, args.ref_threads)) as pool:
        # Every case's fp64 reference is queued first, the longest first, so the CPU works on
        # them while the GPU and fla's compiler work through the cases.
        inputs = {c[0]: _case_inputs(member, c, device) for c in cases}
        futures = {}
        for c in sorted(cases, key=lambda c: -_dims(c)[2] * _dims(c)[4] * _dims(c)[5]):
            futures[c[0]] = pool.submit(_reference, member, inputs[c[0]], _dims(c)[7])
        for case in cases:
            t0 = time.time()
            try:
                row = _run_case(member, case, inputs[case[0]], futures[case[0]], ours,
                                ours_bf16, fla_ops, device, state, fq_ops)
            except Exception as e:  # noqa: BLE001 - one broken case must not hide the others
                import traceback
                result["errors"].append(f"{case[0]}: {type(e).__name__}: {e}")
                _log(member, f"{case[0]}: ERROR {type(e).__name__}: {e}\n"
                     + traceback.format_exc(limit=3))
                continue
            result["rows"].append(row)
            save()
            worst = max(row["metric"].items(), key=lambda kv: kv[1]["ours"] / kv[1]["limit"])
            fla_fig = "-" if worst[1]["fla"] is None else f"{worst[1]['fla']:.2e}"
            timing = f"{time.time() - t0:.1f} s; ours {row['ours_s']:.2f} s"
            if "fla_s" in row:
                timing += f", fla {row['fla_s']:.1f} s"
            timing += f", waited {row['ref_wait_s']:.1f} s for the reference"
            _log(member, f"{row['case']}: CMP-01 {row['cmp01']['verdict']} (worst tau-ratio "
                 f"{row['cmp01']['worst_ratio']:.3g} in {row['cmp01']['output_name']}), "
                 f"fla metric worst {worst[0]}: ours "
                 f"{worst[1]['ours']:.2e}, fla {fla_fig}"
                 + (f"; fla error: {row['fla_error']}" if row["fla_error"] else "")
                 + f" [{timing}]")
    result["done"] = True
    save()
    return 0


# --------------------------------------------------------------------------- parent


# How --split 2 divides a member's cases between two processes: by head dim, so that each
# process compiles (fla) about half of the member's kernel specializations.
GROUPS = [["t1-d64-b2", "t63-d100", "t65-d64-gva", "t1000-d100"],
          ["t64-d128-b2", "varlen-d128-gva", "t8192-d128"]]


def tasks(members, cases_arg, split):
    """[(member, group index, [case names])]: one worker process each."""
    wanted = cases_arg.split(",") if cases_arg else [c[0] for c in CASES]
    if split <= 1:
        groups = [wanted]
    else:
        groups = [[c for c in g if c in wanted] for g in GROUPS]
        groups.append([c for c in wanted if not any(c in g for g in GROUPS)])
    groups = [g for g in groups if g]
    return [(m, i, g) for i, g in enumerate(groups) for m in members]


def merge(members, parts):
    """One result per member from its processes' results, rows in CASES order."""
    order = {c[0]: i for i, c in enumerate(CASES)}
    out = {}
    for m in members:
        mine = [parts[k] for k in sorted(parts) if k.rsplit(".", 1)[0] == m]
        r = {"member": m, "rows": [], "errors": []}
        for part in mine:
            r["rows"] += part.get("rows", [])
            r["errors"] += part.get("errors", [])
            for note in ("fla_note", "flashqla_note"):
                if part.get(note) and note not in r and (note == "fla_note" or m == "gdn"):
                    r[note] = part[note]
        r["rows"].sort(key=lambda row: order.get(row["case"], 99))
        out[m] = r
    return out


def _relay(proc, sink):
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        sink.append(line)


def environment(device):
    import torch
    env = {"python": sys.version.split()[0], "torch": torch.__version__}
    try:
        import triton
        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = "-"
    try:
        import importlib.metadata as md
        env["fla"] = md.version("fla-core")
    except Exception:  # noqa: BLE001
        env["fla"] = "-"
    env["device"] = torch.cuda.get_device_name() if device == "cuda" else "CPU (no GPU)"
    try:
        import kcv._glr as g
        env["kcv._glr"] = g.__file__
        env["has_cuda"] = bool(g.has_cuda())
    except Exception as e:  # noqa: BLE001
        env["kcv._glr"] = f"not importable: {e}"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["nvidia-smi"] = out.stdout.strip() or "-"
    except Exception:  # noqa: BLE001
        env["nvidia-smi"] = "-"
    import gate_judge as gj
    env["judge"] = gj.judge_name()
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="verification.md")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--members", default="gdn,kda,gla,ssd,la,deltanet")
    ap.add_argument("--cases", default="", help="comma list of case names (default: all)")
    ap.add_argument("--fla", choices=("first-fit", "full", "off"), default="first-fit",
                    help="fla's autotuning (first-fit: one config per kernel, no benchmarking)")
    ap.add_argument("--fla-cases", default="", help="run fla only on these cases (default all)")
    ap.add_argument("--flashqla", choices=("exact", "auto-cp", "off"), default="exact",
                    help="FlashQLA's GDN when flash_qla imports (exact: auto_cp=False)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds: stop the member processes then and report what they finished")
    ap.add_argument("--split", type=int, default=2,
                    help="processes per member (2: the cases divided by head dim, see GROUPS)")
    ap.add_argument("--jobs", type=int, default=10, help="worker processes at once")
    ap.add_argument("--ref-threads", type=int, default=2, help="reference threads per process")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--resources", default="auto",
                    help="cuobjdump -res-usage text, or 'auto' (run cuobjdump on kcv/_glr), "
                         "or 'off'")
    ap.add_argument("--command", default=None, help="the command line to print in the report")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    import verification_report as vr
    t_start = time.time()
    env = environment(args.device)
    print("environment: " + json.dumps(env), flush=True)
    members = args.members.split(",")
    tmp = tempfile.mkdtemp(prefix="gates_vs_fla_")
    logs, parts = {}, {}
    pending = tasks(members, args.cases, args.split)
    running, killed = [], set()
    while pending or running:
        while pending and len(running) < args.jobs:
            task = pending.pop(0)
            m, i, group = task
            key = f"{m}.{i}"
            cmd = [sys.executable, "-u", os.path.abspath(__file__), "--worker", m, "--result",
                   os.path.join(tmp, f"{key}.json"), "--device", args.device, "--fla", args.fla, "--flashqla", args.flashqla,
                   "--ref-threads", str(args.ref_threads),
                   "--torch-threads", str(args.torch_threads), "--fla-cases", args.fla_cases,
                   "--cases", ",".join(group)]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 bufsize=1)
            logs[key] = []
            th = threading.Thread(target=_relay, args=(p, logs[key]), daemon=True)
            th.start()
            running.append((task, key, p, th))
        time.sleep(0.2)
        if args.deadline and time.time() - t_start > args.deadline:
            for task, key, p, th in running:
                if p.poll() is None and key not in killed:
                    print(f"[{task[0]}] deadline of {args.deadline:.0f} s reached: stopped "
                          f"(cases {','.join(task[2])})", flush=True)
                    p.kill()
                    killed.add(key)
            for task in pending:
                parts[f"{task[0]}.{task[1]}"] = {"member": task[0], "rows": [], "errors": [
                    f"cases {','.join(task[2])} not started before the deadline of "
                    f"{args.deadline:.0f} s"]}
            pending = []
        for item in list(running):
            task, key, p, th = item
            if p.poll() is None:
                continue
            th.join(timeout=5)
            running.remove(item)
            why = "stopped at the deadline" if key in killed else f"exited with status {p.returncode}"
            path = os.path.join(tmp, f"{key}.json")
            if os.path.exists(path):
                with open(path) as f:
                    parts[key] = json.load(f)
                if not parts[key].get("done"):
                    got = {r["case"] for r in parts[key]["rows"]}
                    missing = [c for c in task[2] if c not in got]
                    parts[key]["errors"].append(f"{why}; not reached: {', '.join(missing)}")
            else:
                parts[key] = {"member": task[0], "rows": [], "errors": [
                    f"worker for {','.join(task[2])} {why} before its first result; last lines: "
                    + " | ".join(s.strip() for s in logs[key][-3:])]}
    results = merge(members, parts)
    resources = vr.resource_rows(args.resources, env) if args.resources != "off" else None
    command = args.command or "python3 " + " ".join([os.path.relpath(__file__)] + sys.argv[1:])
    text, failures = vr.render(env, command, [results[m] for m in members],
                               resources, time.time() - t_start, args)
    with open(args.out, "w") as f:
        f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "results": results, "resources": resources}, f, default=float)
    print(f"\nreport: {args.out}; {failures} failure(s); {time.time() - t_start:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
