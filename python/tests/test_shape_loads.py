"""bench/audit/shape_loads.py on a bundled sample row, on the CPU: each load at another shape
is timed and named, a shape the problem refuses is reported as a failed load (the loads go on),
and --profile prints the functions the loads spent their time in."""

import os
import re
import subprocess
import sys

import pytest

from audit_helpers import REPO, SAMPLE, child_env

pytest.importorskip("torch")

SCRIPT = os.path.join(REPO, "bench", "audit", "shape_loads.py")


def test_loads_at_other_shapes_are_timed_and_a_refused_shape_is_named(tmp_path):
    out = subprocess.run(
        [sys.executable, SCRIPT, SAMPLE, "--id", "sample/cpu/L1/P1", "--device", "cpu",
         "--shape", "batch_size=3", "--shape", "out_features=-1", "--shape", "batch_size=5",
         "--role", "both", "--profile", "5", "--cache-dir", str(tmp_path)],
        capture_output=True, text=True, env=child_env(), timeout=600, check=True).stdout
    assert re.search(r"^reference at \{'batch_size': 3\}: \d+\.\d{3} s$", out, re.M), out
    assert re.search(r"^reference at \{'out_features': -1\}: .*\(failed: init_error", out,
                     re.M), out
    assert re.search(r"^reference: 3 load\(s\) at other shapes", out, re.M), out
    assert re.search(r"^candidate at \{'batch_size': 5\}: \d+\.\d{3} s$", out, re.M), out
    assert "Ordered by: cumulative time" in out
