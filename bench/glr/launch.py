"""Runs the benchmark's precompilation workers side by side under a GPU memory budget.

Every worker compiles into an on-disk cache and holds its own inputs on the one GPU, so how many
run at once is bounded by memory, not by cores: nineteen workers at B1·T32768·H32·D128 do not fit
in 80 GB, and a worker that runs out of memory leaves its configs to be compiled inside the
timed process. A job carries an estimate of its peak GPU memory; a job starts while the estimates
of the running ones and its own fit the budget (the first always starts), longest first. A worker
that exits with OUT_OF_MEMORY_RC ran out of memory beside the others: it runs again after the
wave, in a wave with half the budget, until it fits or runs alone.
"""

import dataclasses
import subprocess
import threading
import time

#: The exit status a worker returns when it ran out of GPU memory (EX_TEMPFAIL of sysexits.h).
OUT_OF_MEMORY_RC = 75


@dataclasses.dataclass
class Job:
    """One worker: its command line, its estimated peak GPU memory, and how it ended."""
    name: str
    cmd: list
    gib: float
    rc: int | None = None
    runs: int = 0


#: A worker's peak GPU memory, estimated: its CUDA context and Triton's modules (CONTEXT_GIB),
#: plus BYTES_FACTOR times the minimum HBM bytes of the forward+backward it runs (inputs,
#: outputs, gradients and the saved states are all of that order; the autotuner's config runs
#: add their own temporaries). Each worker prints its allocator's peak, the check on these.
CONTEXT_GIB = 1.0
BYTES_FACTOR = 3.0
ESTIMATE_TEXT = f"{CONTEXT_GIB:g} GiB + {BYTES_FACTOR:g}x its forward+backward's HBM bytes"


def estimate_gib(model_bytes):
    return CONTEXT_GIB + BYTES_FACTOR * model_bytes / 2**30


def _wave(jobs, budget_gib, echo):
    """Runs jobs, starting each while the running ones' estimates and its own fit budget_gib
    (or nothing is running). Waits for all; sets every job's rc."""
    pending = sorted(jobs, key=lambda j: -j.gib)
    running = []
    lock = threading.Condition()

    def pump(job, proc):
        for line in proc.stdout:
            echo(line)
        job.rc = proc.wait()
        with lock:
            running.remove(job)
            lock.notify()

    threads = []
    with lock:
        while pending:
            used = sum(j.gib for j in running)
            fit = next((j for j in pending if not running or used + j.gib <= budget_gib), None)
            if fit is None:
                lock.wait()
                continue
            pending.remove(fit)
            fit.runs += 1
            proc = subprocess.Popen(fit.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1)
            running.append(fit)
            th = threading.Thread(target=pump, args=(fit, proc), daemon=True)
            th.start()
            threads.append(th)
    for th in threads:
        th.join()


def run(jobs, budget_gib, echo=lambda line: print(line, end="", flush=True)):
    """Runs every job under budget_gib; a job that ran out of memory runs again in a later wave
    with half the budget, and once more alone if it still does not fit. Returns the wall time
    in seconds; each job's rc and runs say how it ended."""
    t0 = time.time()
    todo = list(jobs)
    while todo:
        _wave(todo, budget_gib, echo)
        again = [j for j in todo if j.rc == OUT_OF_MEMORY_RC]
        if not again or budget_gib <= 0:
            break
        # Half the budget next wave; a budget of zero runs one job at a time (the first job of
        # a wave always starts), which is the last try.
        budget_gib = budget_gib / 2 if budget_gib > min(j.gib for j in again) else 0
        todo = again
    return time.time() - t0


def summary(jobs):
    """One sentence for the report: how many workers ran, how many ran again for memory, and
    which still failed (their configs compile in the timed process instead)."""
    again = [j for j in jobs if j.runs > 1]
    failed = [j for j in jobs if j.rc != 0]
    text = f"{len(jobs)} workers"
    if again:
        text += (f", {len(again)} of them run again after running out of GPU memory beside "
                 f"the others ({', '.join(j.name for j in again)})")
    if failed:
        text += (f"; {len(failed)} did not finish ("
                 + ", ".join(f"{j.name}: exit {j.rc}" for j in failed)
                 + "), so the timing process compiled their configs itself")
    return text
