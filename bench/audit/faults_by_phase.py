"""Where the orchestrator touches fresh memory: bench/audit/cpu_battery.py's kernel, with the
minor page faults of the orchestrator's own threads (RUSAGE_THREAD around each request, so calls
made side by side on other threads are not mixed in) summed per kind of work: candidate calls,
judging (oracle preparation included), trusted float64 and float32 runs, input draws. Each fault
is a fresh 4 KiB page; an array of the problem's size is input bytes / 4096 of them. A benchmark,
not a test.

  PYTHONPATH=build/core/python:python .venv/bin/python bench/audit/faults_by_phase.py [--dim N]
"""

import collections
import functools
import os
import resource
import runpy
import sys
import threading
import time

from kcv.audit import battery, session

faults: collections.Counter = collections.Counter()
seconds: collections.Counter = collections.Counter()
_lock = threading.Lock()


def count(cls, name: str, label: str):
    plain = getattr(cls, name)

    @functools.wraps(plain)
    def counted(*args, **kwargs):
        f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        t0 = time.monotonic()
        try:
            return plain(*args, **kwargs)
        finally:
            df = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0
            with _lock:
                faults[label] += df
                seconds[label] += time.monotonic() - t0

    setattr(cls, name, counted)


def main() -> int:
    for name, label in (("run_candidate", "candidate calls"), ("reference64", "float64 runs"),
                        ("reference32", "float32 runs"), ("inputs", "input draws")):
        count(session.ProblemSession, name, label)
    count(battery.Battery, "_judge", "judging")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.argv = [os.path.join(here, "cpu_battery.py")] + sys.argv[1:]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code:
            return int(e.code)
    total = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(f"orchestrator minor faults: {total}; outside the kinds below: "
          f"{total - sum(faults.values())}")
    for label, n in faults.most_common():
        print(f"  {label:16s} {n:>10d} faults  {seconds[label]:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
