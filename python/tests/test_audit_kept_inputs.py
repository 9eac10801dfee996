"""The reference worker keeps the inputs it draws for a seed: its float64 and float32 runs of that
seed receive no inputs (nothing crosses the shared memory but the seed), give the values a run
on inputs sent gives, even for a model that writes to its inputs, and after forget() or a worker
restart the inputs are sent again. Real workers on the CPU."""

import os
import signal
import time

import numpy as np
import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit.session import Limits, ProblemSession  # noqa: E402

# forward writes to its input: a kept input handed to the model itself would change between runs
MUTATES_ITS_INPUT = """
import torch
class Model(torch.nn.Module):
    def forward(self, x, n):
        x.mul_(3.0)
        return torch.tanh(x) + n.sum()
def get_inputs():
    return [torch.randn(64, 8).t(), torch.randint(0, 5, (4,))]
def get_init_inputs():
    return []
"""


class Recording:
    """The reference Worker with its run() calls recorded: (mode, input names, params)."""

    def __init__(self, worker):
        self.worker, self.runs = worker, []

    def run(self, inputs, outputs, *, params, **kw):
        self.runs.append((int(params["mode"]), [n for n, _ in inputs], dict(params)))
        return self.worker.run(inputs, outputs, params=params, **kw)

    def __getattr__(self, name):
        return getattr(self.worker, name)


@pytest.fixture
def session(tmp_path):
    row = {"id": "kept", "corpus": "test", "level": 1, "problem_id": 1, "problem_name": "1_t",
           "language": "pytorch", "reference_code": MUTATES_ITS_INPUT, "candidate_code": ""}
    s = ProblemSession(row, Limits(deadline=time.monotonic() + 300, call_timeout_s=120),
                       device="cpu", cache_dir=str(tmp_path))
    s.start_reference()
    s.reference = Recording(s.reference)
    yield s
    s.close()


def same(a, b):
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def test_runs_of_a_drawn_seed_send_no_inputs_and_match_runs_on_sent_inputs(session):
    s = session
    x = s.inputs(5)
    kept64, kept32 = s.reference64(x, key=5), s.reference32(x, key=5)
    again64 = s.reference64(x, key=5)  # the model wrote to its copy, not to the kept inputs
    sent64, sent32 = s.reference64(x), s.reference32(x)
    modes = [(mode, names) for mode, names, _ in s.reference.runs]
    assert modes == [(1, []), (0, []), (2, []), (0, []), (0, ["input.0", "input.1"]),
                     (2, ["input.0", "input.1"])]
    assert all(p.get("inputs_seed") == 5 for _, _, p in s.reference.runs[1:4])
    assert same(kept64, sent64) and same(again64, sent64) and same(kept32, sent32)
    assert kept64[0].dtype == np.float64 and kept32[0].dtype == np.float32


def test_a_forgotten_seed_is_sent_again_and_only_kept_seeds_stay_in_the_worker(session):
    s = session
    s.keep_seeds = {1}
    x1 = s.inputs(1)
    x2 = s.inputs(2)  # a replica trial's seed: kept by the worker until the next draw
    s.reference32(x2, key=2)
    s.inputs(3)  # forgets seed 2 (mode 3), keeps seed 1
    s.reference32(x1, key=1)
    s.reference32(x2, key=2)
    s.forget(1)
    s.reference64(x1, key=1)
    runs = [(mode, names, p.get("seed"), p.get("inputs_seed")) for mode, names, p in s.reference.runs]
    assert runs == [(1, [], 1, None), (1, [], 2, None), (2, [], None, 2), (3, [], 2, None),
                    (1, [], 3, None), (2, [], None, 1), (2, ["input.0", "input.1"], None, None),
                    (3, [], 1, None), (0, ["input.0", "input.1"], None, None)]


def test_a_worker_killed_since_the_draw_gets_the_inputs_sent_again(session):
    s = session
    x = s.inputs(9)
    before = s.reference64(x, key=9)
    # the host's OOM killer, say; the run goes out at once, while the kill may still be tearing
    # the process down: either it finds the worker gone and restarts it, or the call dies with
    # it and the next one restarts it. Both times the restarted worker keeps nothing: sent again.
    os.kill(s.reference.start()["pid"], signal.SIGKILL)
    after = s.reference64(x, key=9)
    assert [names for _, names, _ in s.reference.runs][-1] == ["input.0", "input.1"]
    assert same(before, after) and s.reference.workers_started > 1
    again = s.reference64(x, key=9)  # seed 9 is no longer taken as kept
    assert [names for _, names, _ in s.reference.runs][-1] == ["input.0", "input.1"]
    assert same(before, again)


def test_a_memoised_seed_drawn_again_forgets_the_last_trial_seed_in_the_worker(session):
    s = session
    s.keep_seeds = {1}
    s.inputs(1)
    s.inputs(2)  # the replica's last trial
    s.inputs(1)  # the battery's seed, memoised: seed 2 is dropped from the worker now
    runs = [(mode, p.get("seed")) for mode, _, p in s.reference.runs]
    assert runs == [(1, 1), (1, 2), (3, 2)]


def test_a_run_naming_inputs_the_worker_does_not_keep_fails(session):
    s = session
    rec = s.reference.run([], [("f64", (8, 64))], params={"mode": 0.0, "inputs_seed": 4.0},
                          timeout_ms=60000)
    assert rec.status != "ok" and "inputs_seed" in rec.message
