"""Hostile candidates (python/tests/hostile/*.py, each documents its trick and what catches it)
run in `python -m kcv.worker` through the protocol test client: each must yield the observable
kcv builds its verdict on — a crash status (the process died, with its signal or exit code), a
timeout (only the caller's deadline ends it), mutated input bytes, wrong values computed in this
process (which candidate code cannot reach), or an intact reply stream.

All hostile files solve the same problem (kb_problems.ADD: x + 3 * y * scale). Candidates that
kill or poison their process get a worker of their own; the others share one worker under a
memory limit, loading one candidate per test. All workers are started at once when the module
begins, so their torch imports overlap.
"""

import json
import os
import re
import signal

import pytest

torch = pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from worker_client import WorkerClient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OWN_WORKER = ["segfault", "infinite_loop", "exit_process", "late_write", "forged_reply",
              "monkeypatch_checks", "gc_overwrite"]
SHAPE = (4, 8)
F32 = torch.float32
MEMORY_LIMIT = 16 << 30  # far above what torch maps at import, far below 1 TiB


def hostile(name: str) -> str:
    with open(os.path.join(HERE, "hostile", name + ".py"), encoding="utf-8") as f:
        return f.read()


def expected(x, y):
    return x + 3.0 * y * 0.5


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("kcv-hostile-cache"))
    workers = {}
    for name in OWN_WORKER:
        workers[name] = WorkerClient()
        workers[name].start_load(kind="kernelbench", role="candidate", reference_code=kb.ADD,
                                 candidate_code=hostile(name), seed=1, device="cpu",
                                 cache_dir=cache)
    shared = WorkerClient(memory_limit=MEMORY_LIMIT)
    shared.start_load(kind="kernelbench", role="reference", reference_code=kb.ADD, seed=1,
                      device="cpu", cache_dir=cache)  # only to import torch early
    workers["shared"] = shared
    yield workers, cache
    for w in workers.values():
        w.close()


def own(fleet, name) -> WorkerClient:
    w = fleet[0][name]
    reply = w.finish_load()
    assert reply["type"] == "loaded", (reply, w.stderr())
    return w


def shared(fleet, name) -> WorkerClient:
    w, cache = fleet[0]["shared"], fleet[1]
    if not getattr(w, "ready", False):
        assert w.finish_load()["type"] == "loaded", w.stderr()
        w.ready = True
    reply = w.load(kind="kernelbench", role="candidate", reference_code=kb.ADD,
                   candidate_code=hostile(name), seed=1, device="cpu", cache_dir=cache)
    assert reply["type"] == "loaded", (reply, w.stderr())
    return w


def inputs():
    return torch.randn(*SHAPE), torch.randn(*SHAPE)


# --- candidates that end their worker ------------------------------------------------------

def test_segfault_kills_the_worker_with_sigsegv(fleet):
    w = own(fleet, "segfault")
    with pytest.raises(EOFError):
        w.call(list(inputs()), [(F32, SHAPE)])
    assert w.proc.wait(30) == -signal.SIGSEGV
    assert "Segmentation fault" in w.stderr()  # faulthandler's stack, for kcv's stderr tail


def test_infinite_loop_needs_the_callers_deadline(fleet):
    w = own(fleet, "infinite_loop")
    call = w.call(list(inputs()), [(F32, SHAPE)], timeout=1.5)
    assert call.reply is None and w.proc.poll() is None  # still running, no reply
    w.kill()
    assert w.proc.returncode == -signal.SIGKILL


def test_exit_from_forward_is_a_crash_with_its_exit_code(fleet):
    w = own(fleet, "exit_process")
    with pytest.raises(EOFError):
        w.call(list(inputs()), [(F32, SHAPE)])
    assert w.proc.wait(30) == 3


def test_a_write_through_a_kept_view_after_the_call_kills_the_worker(fleet):
    w = own(fleet, "late_write")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok" and torch.equal(call.outputs[0], expected(x, y))
    assert w.proc.wait(30) == -signal.SIGSEGV


def test_a_forged_reply_shows_up_as_a_duplicate_result(fleet):
    w = own(fleet, "forged_reply")
    call_inputs = inputs()
    call = w.call(list(call_inputs), [(F32, SHAPE)])
    real = w.recv(30)
    assert call.reply["message"] == "forged"
    assert real["type"] == "result" and real["id"] == call.reply["id"]
    assert "message" not in real  # the worker's own reply
    # what kcv reads when the forged line arrives: the sentinel (or the zeros), never the sum
    assert not torch.allclose(call.outputs[0], expected(*call_inputs))


# --- candidates that poison their process --------------------------------------------------

def test_patched_comparisons_do_not_reach_the_trusted_side(fleet):
    w = own(fleet, "monkeypatch_checks")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok"
    assert not torch.allclose(call.outputs[0], expected(x, y))  # this process is unpatched
    assert torch.count_nonzero(call.outputs[0]) == 0


def test_gc_walk_can_only_reach_this_calls_views(fleet):
    w = own(fleet, "gc_overwrite")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok"
    assert torch.equal(call.outputs[0], expected(x, y))  # the result was copied after the fill
    assert call.inputs_unchanged == [False, False]  # the NaN fill hit kcv's input bytes


# --- candidates sharing one worker (memory-limited) ----------------------------------------

def test_huge_allocation_is_an_exception_and_the_worker_lives_on(fleet):
    w = shared(fleet, "huge_allocation")
    call = w.call(list(inputs()), [(F32, SHAPE)])
    assert call.reply["status"] == "exception"
    assert "allocate" in call.reply["message"], call.reply
    w.load(kind="kernelbench", role="candidate", reference_code=kb.ADD,
           candidate_code=kb.ADD_CANDIDATE, seed=1, device="cpu", cache_dir=fleet[1])
    x, y = inputs()
    again = w.call([x, y], [(F32, SHAPE)])
    assert again.reply["status"] == "ok" and torch.equal(again.outputs[0], expected(x, y))


def test_in_place_input_writes_are_visible_to_kcv(fleet):
    w = shared(fleet, "mutate_inputs")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok" and torch.equal(call.outputs[0], expected(x, y))
    assert call.inputs_unchanged == [False, True]


@pytest.mark.parametrize("name", ["cache_by_pointer", "cache_by_identity"])
def test_results_cached_by_pointer_or_identity_never_hit(fleet, name):
    w = shared(fleet, name)
    before = len(re.findall(r"KCV-HOSTILE-KEY (.*)", w.stderr()))
    outs = []
    for _ in range(3):
        x, y = inputs()
        call = w.call([x, y], [(F32, SHAPE)])
        assert call.reply["status"] == "ok"
        outs.append((call.outputs[0], expected(x, y)))
    keys = re.findall(r"KCV-HOSTILE-KEY (.*)", w.stderr())[before:]
    assert len(keys) == 3 and len(set(keys)) == 3
    assert all(torch.equal(got, want) for got, want in outs)  # no stale result served


def test_work_finished_after_return_is_not_seen(fleet):
    w = shared(fleet, "deferred_thread")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok"
    assert torch.count_nonzero(call.outputs[0]) == 0  # zeros: the thread had not run yet
    assert not torch.allclose(call.outputs[0], expected(x, y))


def test_a_lazy_tensor_subclass_gives_its_storage_not_its_story(fleet):
    w = shared(fleet, "lazy_output")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok", call.reply
    assert torch.count_nonzero(call.outputs[0]) == 0


def test_stdout_noise_lands_in_stderr(fleet):
    w = shared(fleet, "stdout_noise")
    x, y = inputs()
    call = w.call([x, y], [(F32, SHAPE)])
    assert call.reply["status"] == "ok" and torch.equal(call.outputs[0], expected(x, y))
    assert all(isinstance(json.loads(line), dict) for line in w.lines)
    err = w.stderr()
    for channel in ("print", "sys.stdout", "sys.__stdout__", "fd1", "printf"):
        for where in ("import", "forward"):
            assert f"KCV-HOSTILE-NOISE {channel} {where}" in err, (channel, where)
