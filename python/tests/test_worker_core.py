"""The Python worker behind kcv's own executor (kcv._core.Worker, the C++ WorkerExecutor): the
trusted side's view of the same behaviours test_worker.py and test_hostile.py check with the
test client — the load reply reaches start(), a draw task and a reference64 task give the inputs
and the float64 oracle, non-contiguous numpy inputs are read by stride, and hostile candidates
become the CallRecord fields the gates judge (inputs_unchanged, crash, timeout, all_written).
Calls are typed tasks (docs/06 §7.3); a call without one is refused by the worker, which is
checked here too; Worker.run's `task=` sends one. Through
verify_module the same behaviours are judged end to end (test_audit_limits.py,
test_audit_sample.py, test_verify.py). Skipped when kcv._core is not built
(PYTHONPATH=<build>/python:<repo>/python)."""

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
core = pytest.importorskip("kcv._core")

import kb_problems as kb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = [sys.executable, "-m", "kcv.worker"]


def hostile(name):
    with open(os.path.join(HERE, "hostile", name + ".py"), encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("kcv-core-cache"))

    def make(role, cand=None, name="Model"):
        load = {"kind": "kernelbench", "role": role, "reference_code": kb.ADD, "seed": 2,
                "device": "cpu", "cache_dir": cache, "op": "kernelbench"}
        if cand is not None:
            load["candidate_code"] = cand
        # five torch imports at once on a loaded 2-core host: minutes, not the default 2
        return core.Worker(COMMAND, load, name=name, startup_timeout_ms=600_000)

    made = {"reference": make("reference"),
            "good": make("candidate", kb.ADD_CANDIDATE, "ModelNew"),
            "mutate": make("candidate", hostile("mutate_inputs"), "ModelNew"),
            "segfault": make("candidate", hostile("segfault"), "ModelNew"),
            "loop": make("candidate", hostile("infinite_loop"), "ModelNew")}
    # start() releases the GIL, so the workers' torch imports overlap. The pool's threads must
    # outlive the workers: a worker gets SIGKILL when the thread that spawned it ends
    # (PR_SET_PDEATHSIG is per thread), so the pool is shut down only after close().
    pool = ThreadPoolExecutor(len(made))
    started = dict(zip(made, pool.map(lambda w: w.start(), made.values())))
    yield made, started
    for w in made.values():
        w.close()
    pool.shutdown()


def want(x, y):
    return x + 3.0 * y * 0.5


def test_start_returns_the_workers_load_reply(workers):
    _, started = workers
    reply = started["reference"]["reply"]
    assert reply["type"] == "loaded" and reply["problem"]["constants"]["SIZE"] == 32
    assert started["reference"]["concurrent_calls"] is False
    assert started["good"]["name"] == "ModelNew"




def test_a_call_without_a_task_is_refused_not_run(workers):
    w = workers[0]["reference"]
    for params in ({"mode": 1, "seed": 9}, {}):
        rec = w.run([], [("f32", (4, 8)), ("f32", (4, 8))], params=params)
        assert rec.status == "bad_output", rec.message  # an error reply: nothing ran
        assert "numeric modes are gone" in rec.message or "task: missing" in rec.message, rec.message


def test_a_draw_then_a_reference64_task_through_the_executor(workers):
    w = workers[0]["reference"]
    gen = w.run([], [("f32", (4, 8)), ("f32", (4, 8))], task={"kind": "draw", "seed": 9})
    assert gen.status == "ok" and gen.all_written, gen.message
    ref = kb.module(kb.ADD)
    torch.manual_seed(9)
    x, y, _ = ref.get_inputs()
    assert np.array_equal(gen.outputs[0], x.numpy()) and np.array_equal(gen.outputs[1], y.numpy())
    oracle = w.run([("x", gen.outputs[0]), ("y", gen.outputs[1])], [("f64", (4, 8))],
                   task={"kind": "reference64", "seed": 9})
    assert oracle.status == "ok"
    assert np.array_equal(oracle.outputs[0], want(x.double(), y.double()).numpy())


RUN = {"kind": "run", "seed": 7}


def test_non_contiguous_numpy_inputs_are_read_by_stride(workers):
    w = workers[0]["good"]
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 11)).astype(np.float32)[:, 1:9]  # padded rows, offset 1
    y = np.broadcast_to(rng.standard_normal(8).astype(np.float32), (4, 8))  # stride 0
    r = w.run([("x", x), ("y", y)], [("f32", (4, 8))], task=RUN, address_shift=4)
    assert r.status == "ok", r.message
    assert r.inputs_unchanged and r.guards_intact and r.all_written
    expect = want(torch.from_numpy(x), torch.from_numpy(y.copy()))
    assert np.array_equal(r.outputs[0], expect.numpy())


def test_an_input_written_in_place_is_a_mutation_record(workers):
    w = workers[0]["mutate"]
    x, y = np.ones((4, 8), np.float32), np.ones((4, 8), np.float32)
    r = w.run([("x", x), ("y", y)], [("f32", (4, 8))], task=RUN)
    assert r.status == "ok" and not r.inputs_unchanged
    assert r.mutated_input == 0  # the index of x


def test_a_segfault_is_a_crash_record_and_the_next_call_restarts(workers):
    w = workers[0]["segfault"]
    x = np.ones((4, 8), np.float32)
    r = w.run([("x", x), ("y", x)], [("f32", (4, 8))], task=RUN)
    assert r.status == "crash" and "signal 11" in r.message, r.message
    assert w.workers_started == 1


def test_an_endless_forward_is_a_timeout_record(workers):
    w = workers[0]["loop"]
    x = np.ones((4, 8), np.float32)
    r = w.run([("x", x), ("y", x)], [("f32", (4, 8))], task=RUN, timeout_ms=1500)
    assert r.status == "timeout" and "killed by kcv" in r.message, r.message
