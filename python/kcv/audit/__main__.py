"""`python -m kcv.audit CORPUS.jsonl... --store audit.db`: the audit's command line (`kcv audit`
execs this with the same arguments). Exit 0 when the audit ran (whatever the kernels did),
1 when an orchestrator process of --procs failed, 2 on bad arguments, a device this host does not
have, a store that cannot be opened, fails verification or is changed during the run, or a
store judged by another generator, or --ray without an importable ray package: each a one-line
error. Run as a program, it first re-execs itself with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 when
the caller has not set GLIBC_TUNABLES (huge_pages_for_malloc). Documented in docs/08_audit.md."""

from __future__ import annotations

import argparse
import os
import sys

PROFILES = ("strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager")


def _one_shard(text: str) -> str:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard: expected i/n, got {text!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise argparse.ArgumentTypeError(f"--shard: need 0 <= i < n, got {text!r}")
    return f"{i}/{n}"


def _shard(text: str) -> str:
    """i/n, or a comma list of them done in that order (orchestrator.shard_list)."""
    return ",".join(_one_shard(s.strip()) for s in text.split(","))


def _profiles(text: str) -> list[str]:
    names = [p.strip().lower().replace("_", "-") for p in text.split(",") if p.strip()]
    bad = [p for p in names if p not in PROFILES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"--profiles: unknown profile {', '.join(bad) or '(none)'}; known: {', '.join(PROFILES)}")
    return names


def _non_negative(text: str) -> float:
    v = float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def _positive(kind):
    def parse(text):
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v
    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kcv audit",
        description="Audit KernelBench-style corpora: the twelve gates and KernelBench's own "
                    "check on every kernel, into a resumable SQLite store (docs/08_audit.md).")
    p.add_argument("corpora", nargs="+", metavar="CORPUS.jsonl", help="corpus files (JSONL rows)")
    p.add_argument("--store", required=True, help="SQLite store (created when absent; resumed otherwise)")
    p.add_argument("--shard", type=_shard, default="0/1",
                   help="i/n: audit only this shard (default 0/1); a comma list such as "
                        "0/4,0/2,0/1 audits their union, each shard's kernels before the next's, so "
                        "a run cut short has finished whole shards (unbiased samples) first")
    p.add_argument("--jobs", type=_positive(int), default=None,
                   help="parallel kernel slots (default 1; with --ray, kernels in flight on the "
                        "cluster, default one per GPU with --device cuda, else one per "
                        "--worker-threads CPUs)")
    p.add_argument("--limit", type=_positive(int),
                   help="audit at most N rows (in corpus order, shard by shard for a --shard list)")
    p.add_argument("--ids", nargs="+", metavar="ID", help="audit only these row ids")
    p.add_argument("--ids-from", metavar="FILE",
                   help="audit only the row ids listed in FILE, one a line ('#' comments and blank "
                        "lines ignored); with --ids, the ids of both")
    p.add_argument("--kernel-timeout", type=_positive(float), default=900.0, metavar="S",
                   help="seconds per kernel after its workers' load: the replica and the gates "
                        "(default 900)")
    p.add_argument("--load-timeout", type=_positive(float), default=900.0, metavar="S",
                   help="seconds for the load of a kernel's four workers, compiles included "
                        "(default 900); a load over it ends the kernel as timeout")
    p.add_argument("--call-timeout", type=_positive(float), default=120.0, metavar="S",
                   help="seconds per worker call (default 120)")
    p.add_argument("--cache-dir", help="build cache shared by all workers and runs (torch extension "
                                       "and Triton builds by content, docs/08 §6; default: "
                                       "kcv-cache beside the store)")
    p.add_argument("--shm-dir", metavar="DIR",
                   help="where the workers' per-call shared-memory files are made (default "
                        "/dev/shm); a tmpfs mounted with huge=within_size makes them in a sixth "
                        "of the time (docs/08 §6, \"Call files\")")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where candidates run (auto: cuda when available)")
    p.add_argument("--profiles", type=_profiles, default=list(PROFILES),
                   help="comma list of semantic profiles to judge under (default: all five)")
    p.add_argument("--memory-limit-gb", type=float, default=None, metavar="GB",
                   help="address-space limit per worker (default: 32 on --device cpu, none "
                        "otherwise: CUDA reserves far more address space than it uses)")
    p.add_argument("--alone-input-gb", type=float, default=1.0, metavar="GB",
                   help="kernels whose get_inputs() exceed GB wait for the end and run alone "
                        "(default 1)")
    p.add_argument("--max-input-gb", type=float, default=None, metavar="GB",
                   help="kernels whose get_inputs() exceed GB get status error instead of "
                        "running (default: host memory / 12; the trusted side holds several copies)")
    p.add_argument("--reduce-over-gb", type=_non_negative, default=1.0, metavar="GB",
                   help="kernels whose inputs + outputs exceed GB are judged (replica and "
                        "gates) at a reduced shape of about --reduce-to-gb, every verdict "
                        "marked so (default 1; 0: never; docs/08_audit.md)")
    p.add_argument("--reduce-to-gb", type=_positive(float), default=0.125, metavar="GB",
                   help="inputs + outputs the reduced shape aims at (default 0.125)")
    p.add_argument("--host-memory-gb", type=float, default=None, metavar="GB",
                   help="host memory the parallel kernels may hold together, by estimate (a "
                        "kernel waits for room; one over the whole budget runs alone at the end; "
                        "default: half of physical memory; 0: no budget)")
    p.add_argument("--time-limit", type=_positive(float), metavar="S",
                   help="start no new kernel after S seconds (kernels in flight finish, bounded by "
                        "--load-timeout + --kernel-timeout); the rest stays pending for the next run")
    p.add_argument("--timings", metavar="FILE.jsonl",
                   help="append per-kernel wall times (size, load, replica, gates, "
                        "total; build, build_cached: the candidate's JIT build) as JSON lines, "
                        "for bench/")
    p.add_argument("--gpus", type=_positive(int), default=None, metavar="N",
                   help="spread kernels over the first N visible GPUs, each kernel's workers on "
                        "one (default: all visible GPUs; ignored with --device cpu)")
    p.add_argument("--worker-threads", type=_positive(int), default=None, metavar="N",
                   help="CPU threads per worker process (default: CPU cores / --jobs, at least 1)")
    p.add_argument("--procs", type=_positive(int), default=1, metavar="P",
                   help="orchestrator processes sharing --jobs, the host-memory budget and the "
                        "GPUs (default 1): each process has its own interpreter and address "
                        "space, and all of them hold memory from the one --host-memory-gb")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the kernels on a Ray cluster (needs the ray package): ADDRESS of its "
                        "head (host:port, ray://host:port), auto (the cluster this host belongs "
                        "to) or local (a Ray instance of this host); the store stays here "
                        "(docs/11_scale_out.md)")
    p.add_argument("--host-memory-ledger", type=_ledger_row, default=None, help=argparse.SUPPRESS)
    p.add_argument("--defer-alone", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--progress-events", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--all-alone", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cold-workers", action="store_true",
                   help="start every worker as a fresh interpreter instead of forking it from a "
                        "warm parent that has torch imported (docs/06 §8; slower, for comparison)")
    p.add_argument("--max-attempts", type=_positive(int), default=2, metavar="N",
                   help="runs that may die (the orchestrator killed or stopped) while a kernel "
                        "runs before it is recorded as poison and skipped (default 2); a kernel "
                        "left running by a dead run runs first, alone, on resume")
    p.add_argument("--stale", choices=("reaudit", "keep"), default="reaudit",
                   help="a row whose content changed under the same id since it was judged: "
                        "judge it again (reaudit, default) or keep its verdicts and count it "
                        "stale in kcv report (keep)")
    p.add_argument("--key-dir", default="", metavar="DIR",
                   help="directory of store keys (default: $KCV_KEY_DIR, else "
                        "~/.config/kcv/store-keys); keep it where no candidate can read it")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run candidate workers without their sandbox (as KCV_SANDBOX=off does; "
                        "every verdict is then marked unsandboxed, docs/10_threat_model.md)")
    p.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    return p


def _ledger_row(text: str) -> tuple[str, int]:
    """FILE:ROW of --host-memory-ledger (a --procs child's row of the shared budget)."""
    path, sep, row = text.rpartition(":")
    if not sep or not path or not row.isdigit():
        raise argparse.ArgumentTypeError(f"expected FILE:ROW, got {text!r}")
    return path, int(row)


def _host_memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError):
        return 64.0


def read_ids(path: str) -> list[str]:
    """The ids of an --ids-from file: one a line, '#' to the end of a line is a comment."""
    with open(path, encoding="utf-8") as f:
        return [line.split("#", 1)[0].strip() for line in f if line.split("#", 1)[0].strip()]


def cuda_missing() -> str:
    """Why --device cuda cannot run here, or "" when a CUDA device is visible."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - no torch: no CUDA either
        return f"torch cannot be imported ({type(e).__name__}: {e})"
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return ""
    except Exception as e:  # noqa: BLE001 - a broken driver says the same
        return f"torch.cuda fails ({type(e).__name__}: {e})"
    return "torch.cuda.is_available() is False (no CUDA driver or device on this host)"


def ray_missing() -> str:
    """Why --ray cannot run here (the ray package does not import), or ""."""
    try:
        import ray  # noqa: F401
    except Exception as e:  # noqa: BLE001 - a broken install says the same
        return (f"the ray package cannot be imported ({type(e).__name__}: {e}); install it "
                "(pip install ray) or run without --ray")
    return ""


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if 0 < args.reduce_over_gb <= args.reduce_to_gb:
        p.error(f"--reduce-over-gb {args.reduce_over_gb:g} must exceed --reduce-to-gb "
                f"{args.reduce_to_gb:g} (or be 0: never reduce)")
    if args.ids_from:
        try:
            args.ids = (args.ids or []) + read_ids(args.ids_from)
        except (OSError, ValueError) as e:  # ValueError: not UTF-8 text
            print(f"kcv audit: error: --ids-from {args.ids_from!r}: {getattr(e, 'strerror', None) or e}",
                  file=sys.stderr)
            return 2
        if not args.ids:
            print(f"kcv audit: error: --ids-from {args.ids_from!r} lists no id", file=sys.stderr)
            return 2
    if args.ray is not None:
        if args.procs > 1:
            p.error("--ray and --procs exclude each other (on Ray, --jobs sets the kernels in flight)")
        why = ray_missing()
        if why:
            print(f"kcv audit: error: --ray: {why}", file=sys.stderr)
            return 2
    if args.jobs is None:
        args.jobs = 0 if args.ray is not None else 1  # 0: RayAuditor sizes it to the cluster
    if args.progress_events:  # a child of the --procs launcher: die with it
        from kcv.audit.parallel import die_with_parent

        die_with_parent()
    for path in args.corpora:
        if not os.path.isfile(path):
            print(f"kcv audit: error: corpus {path!r}: no such file", file=sys.stderr)
            return 2
    if args.device == "cuda" and not args.progress_events and args.ray is None:
        # a --procs child: its launcher checked; on Ray, the cluster is checked (kcv/ray.py)
        why = cuda_missing()
        if why:
            print(f"kcv audit: error: --device cuda: {why}; nothing was run (use --device cpu, "
                  "or auto to take CUDA where it is)", file=sys.stderr)
            return 2
    if args.no_sandbox:
        os.environ["KCV_SANDBOX"] = "off"  # read by kcv._core, and by --procs children
    from kcv import _core, sandbox
    from kcv.audit.orchestrator import AuditConfig, AuditRefused, run_audit

    # No sandbox sees the store or its key, whatever the read-only paths hold (an environment
    # variable, so --procs children and Ray actors keep them out too).
    sandbox.hide([os.path.dirname(os.path.abspath(args.store)),
                  args.key_dir or _core.default_key_dir()])

    cache = args.cache_dir or os.path.join(os.path.dirname(os.path.abspath(args.store)), "kcv-cache")
    if args.shm_dir is not None and not os.path.isdir(args.shm_dir):
        print(f"kcv audit: error: --shm-dir {args.shm_dir!r}: no such directory; nothing was run",
              file=sys.stderr)
        return 2
    mem_gb = args.memory_limit_gb if args.memory_limit_gb is not None else (32.0 if args.device == "cpu" else 0.0)
    max_in = args.max_input_gb if args.max_input_gb is not None else _host_memory_gb() / 12
    host_gb = args.host_memory_gb if args.host_memory_gb is not None else _host_memory_gb() / 2
    threads = args.worker_threads or max(1, (os.cpu_count() or 1) // max(1, args.jobs))
    if args.ray is not None:
        threads = args.worker_threads or 1  # each actor reserves this many CPUs of its node
    gpus = None
    if args.device != "cpu" and args.ray is None:
        from kcv.audit.gpus import visible_gpus

        gpus = visible_gpus(args.gpus)
    opts = AuditConfig(corpora=args.corpora, store=args.store, shard=args.shard, jobs=args.jobs,
                        limit=args.limit, ids=args.ids, kernel_timeout_s=args.kernel_timeout,
                        load_timeout_s=args.load_timeout,
                        call_timeout_s=args.call_timeout, cache_dir=os.path.abspath(cache),
                        device=args.device, profiles=args.profiles, progress=not args.no_progress,
                        memory_limit_bytes=int(mem_gb * (1 << 30)), timings_path=args.timings,
                        time_limit_s=args.time_limit,
                        alone_input_bytes=int(args.alone_input_gb * (1 << 30)),
                        max_input_bytes=int(max_in * (1 << 30)),
                        host_memory_bytes=int(host_gb * (1 << 30)),
                        host_memory_ledger=args.host_memory_ledger,
                        gpus=gpus, worker_threads=threads, defer_alone=args.defer_alone,
                        progress_events=args.progress_events, all_alone=args.all_alone,
                        reduce_over_bytes=int((args.reduce_over_gb or 0) * (1 << 30)),
                        reduce_to_bytes=int(args.reduce_to_gb * (1 << 30)),
                        warm_workers=not args.cold_workers, max_attempts=args.max_attempts,
                        stale=args.stale, key_dir=args.key_dir,
                        shm_dir=os.path.abspath(args.shm_dir) if args.shm_dir else None)
    try:
        if args.ray is not None:
            from kcv.ray import run_audit_on_ray

            summary = run_audit_on_ray(opts, args.ray)
        else:
            summary = run_audit(opts, procs=args.procs)
    except AuditRefused as e:
        print(f"kcv audit: error: {e}", file=sys.stderr)
        return 2
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items()))
    replica = ", ".join(f"{k} {v}" for k, v in sorted(summary["replica"].items()))
    print(f"kcv audit: run {summary['run_id']} done; store {args.store}")
    print(f"kernels by status (corpora {', '.join(sorted(summary.get('corpora', []))) or '-'}): "
          f"{statuses or 'none'}")
    print(f"KernelBench replica: {replica or 'no verdicts'}")
    if summary.get("sandbox"):
        print(f"sandbox: {summary['sandbox']}")
    print(f"left to do: {summary['left']}" + (" (run the same command again)" if summary["left"] else ""))
    if summary.get("failed_processes"):
        print(f"kcv audit: {summary['failed_processes']} orchestrator process(es) failed (their "
              "errors are above)", file=sys.stderr)
        return 1
    return 0


def huge_pages_for_malloc() -> None:
    """Unless the caller set GLIBC_TUNABLES (even empty: that turns this off), sets it to
    glibc.malloc.hugetlb=1 and re-execs this interpreter with the same command line.

    glibc reads tunables only at process start, hence the exec. malloc then advises its large
    blocks as transparent huge pages where THP is `madvise` (no effect under `never` or `always`,
    nor before glibc 2.35), so the fresh buffers of every call fault once per 2 MiB rather than
    per 4 KiB. Every worker and --procs child inherits it; --ray forwards it to its actors
    (kcv.ray.FORWARDED_ENV). Runs before any heavy import, so the re-exec costs one bare
    interpreter start."""
    if "GLIBC_TUNABLES" in os.environ or not sys.executable:
        return
    os.environ["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
    # sys.orig_argv keeps the interpreter's flags (-m kcv.audit, -X, -u ...); argv[0] becomes
    # sys.executable so the new process finds the same prefix (venv) even when argv[0] was a
    # bare name that PATH resolves to another interpreter.
    try:
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    except OSError:
        pass  # cannot exec: run without it here (the workers still inherit the tunable)


if __name__ == "__main__":
    huge_pages_for_malloc()
    sys.exit(main())
