"""The reference load's sizing on the meta device (load field size_on_meta_over,
kcv.worker.meta): a problem over the limit is described without being drawn, built or run (its
facts only the constants), and its worker refuses calls; under the limit, or where meta cannot tell, the load is the real one,
unless (load field refuse_models_over) the models alone are over that limit."""

import signal
import threading
import time
import types

import pytest

torch = pytest.importorskip("torch")

from torch.overrides import TorchFunctionMode  # noqa: E402

import kb_problems as kb  # noqa: E402
from worker_client import ref64  # noqa: E402

from kcv.worker.meta import WALL_BACKSTOP, model_bytes_on_meta, size_on_meta  # noqa: E402

ADD_IO = 3 * 4 * 8 * 4  # kb.ADD's inputs and output: three 4 x 8 float32 tensors
# 2^40 floats an input and the output: 12 TiB in + out, never allocatable; sized on meta only.
HUGE = kb.ADD.replace("torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), 0.5",
                      "torch.randn(2 ** 40), torch.randn(2 ** 40), 0.5")
# A forward meta cannot run (.item() has no value on meta): the load is the real one.
NO_META_FORWARD = kb.ADD.replace("return x + self.alpha * y * scale",
                                 "return x + self.alpha * y * scale * (x.sum() * 0 + 1).item()")

# A Linear(N, N) whose forward meta cannot size: 4160 floating elements, 4 + 8 bytes each in
# the reference's float32 and float64 models.
WEIGHTY = """
import torch

N = 64


class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        return self.lin(x) * (x.sum() * 0 + 1).item()


def get_inputs():
    return [torch.randn(2, N)]


def get_init_inputs():
    return [N]
"""
WEIGHTY_MODELS = (64 * 64 + 64) * (4 + 8)


def load(worker, cache_dir, ref, role="reference", **extra):
    fields = dict(kind="kernelbench", role=role, reference_code=ref, seed=7,
                  cache_dir=cache_dir, device="cpu", **extra)
    if role == "candidate":
        fields["candidate_code"] = ref.replace("class Model(", "class ModelNew(")
    return worker.load(**fields)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kcv-cache"))


def test_over_the_limit_the_problem_is_only_sized_and_calls_are_refused(worker, cache_dir):
    reply = load(worker, cache_dir, kb.ADD, size_on_meta_over=ADD_IO - 1)
    assert reply["type"] == "loaded", reply
    # nothing ran, so nothing was traced: the facts are the constants alone (read by ast), what
    # a reduced shape is made of (kcv.audit.rescale)
    assert reply["problem"].pop("facts") == {"constants": [
        {"name": "ROWS", "value": 4, "get_inputs": True, "init": False},
        {"name": "COLS", "value": 8, "get_inputs": True, "init": False},
        {"name": "SIZE", "value": 32, "get_inputs": False, "init": False}]}
    assert reply["problem"] == {
        "inputs": [{"kind": "tensor", "dtype": "f32", "shape": [4, 8]},
                   {"kind": "tensor", "dtype": "f32", "shape": [4, 8]},
                   {"kind": "scalar", "value": 0.5}],
        "outputs": [{"dtype": "f32", "shape": [4, 8]}],
        "constants": {"ROWS": 4, "COLS": 8, "SIZE": 32},
        "sized_on_meta": True}
    r = worker.call([torch.randn(4, 8), torch.randn(4, 8)], [(torch.float64, (4, 8))],
                    ref64())
    assert r.reply["type"] == "error" and "only sized the problem on meta" in r.reply["message"]


def test_at_or_under_the_limit_the_load_is_the_real_one(worker, cache_dir):
    reply = load(worker, cache_dir, kb.ADD, size_on_meta_over=ADD_IO)
    assert reply["type"] == "loaded" and "sized_on_meta" not in reply["problem"], reply
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(torch.float64, (4, 8))], ref64())
    assert r.reply["status"] == "ok", r.reply
    torch.testing.assert_close(r.outputs[0], x.double() + 1.5 * y.double())


def test_a_problem_too_big_to_draw_is_sized_without_allocating(worker, cache_dir):
    reply = load(worker, cache_dir, HUGE, size_on_meta_over=1 << 30)
    assert reply["type"] == "loaded", reply
    assert reply["problem"]["sized_on_meta"] is True
    assert reply["problem"]["outputs"] == [{"dtype": "f32", "shape": [2 ** 40]}]


def test_where_meta_cannot_run_the_forward_the_load_is_the_real_one(worker, cache_dir):
    reply = load(worker, cache_dir, NO_META_FORWARD, size_on_meta_over=1)
    assert reply["type"] == "loaded" and "sized_on_meta" not in reply["problem"], reply
    r = worker.call([torch.randn(4, 8), torch.randn(4, 8)], [(torch.float64, (4, 8))],
                    ref64())
    assert r.reply["status"] == "ok", r.reply


def test_where_meta_cannot_size_the_forward_models_over_the_limit_are_refused(worker, cache_dir):
    reply = load(worker, cache_dir, WEIGHTY, size_on_meta_over=1,
                 refuse_models_over=WEIGHTY_MODELS - 1)
    assert reply["type"] == "error", reply
    assert reply["message"].startswith("problem_error: the reference's models hold 0.0 MiB"), reply
    assert "where its forward could not be sized" in reply["message"], reply
    assert reply["reusable"] is True, reply  # nothing was built: the next shape loads here
    reply = load(worker, cache_dir, WEIGHTY, size_on_meta_over=1,
                 refuse_models_over=WEIGHTY_MODELS)
    assert reply["type"] == "loaded" and "sized_on_meta" not in reply["problem"], reply
    r = worker.call([torch.randn(2, 64)], [(torch.float64, (2, 64))], ref64())
    assert r.reply["status"] == "ok", r.reply


def test_where_meta_sizes_the_forward_the_models_are_not_counted(worker, cache_dir):
    sizable = WEIGHTY.replace(" * (x.sum() * 0 + 1).item()", "")
    reply = load(worker, cache_dir, sizable, size_on_meta_over=1 << 20, refuse_models_over=1)
    assert reply["type"] == "loaded" and "sized_on_meta" not in reply["problem"], reply


def test_model_bytes_on_meta_counts_both_models_without_allocating():
    class Model(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = torch.nn.Linear(n, n)
            self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    ref = types.SimpleNamespace(Model=Model, get_init_inputs=lambda: [1 << 20])
    # 2^40 + 2^20 floating elements (12 bytes each) and one int64 buffer in each model: never
    # allocatable
    assert model_bytes_on_meta(ref, 0) == ((1 << 40) + (1 << 20)) * 12 + 2 * 8
    ref.get_init_inputs = lambda: [1 << 40]  # a build meta cannot make (its size overflows)
    assert model_bytes_on_meta(ref, 0) is None


@pytest.mark.parametrize("fields, says", [
    ({"refuse_models_over": -1, "size_on_meta_over": 1}, "non-negative integer"),
    ({"refuse_models_over": 1}, "needs size_on_meta_over"),
])
def test_a_bad_refuse_models_over_is_a_bad_request(worker, cache_dir, fields, says):
    reply = load(worker, cache_dir, kb.ADD, **fields)
    assert reply["type"] == "error", reply
    assert reply["message"].startswith("bad_request: refuse_models_over:") and says in \
        reply["message"], reply


@pytest.mark.parametrize("fields, says", [
    ({"size_on_meta_over": -1}, "non-negative integer"),
    ({"size_on_meta_over": 1.5}, "non-negative integer"),
    ({"size_on_meta_over": True}, "non-negative integer"),
    ({"size_on_meta_over": 1, "role": "candidate"}, "only the reference role"),
])
def test_a_bad_size_on_meta_over_is_a_bad_request(worker, cache_dir, fields, says):
    reply = load(worker, cache_dir, kb.ADD, **fields)
    assert reply["type"] == "error", reply
    assert reply["message"].startswith("bad_request: size_on_meta_over:") and says in \
        reply["message"], reply


def _reference(forward, inputs=lambda: [torch.randn(4, 8)]):
    class Model(torch.nn.Module):
        def forward(self, x):
            return forward(x)

    return types.SimpleNamespace(Model=Model, get_inputs=inputs, get_init_inputs=lambda: [])


def test_size_on_meta_gives_up_on_a_slow_forward_and_puts_the_timer_back():
    def slow(x):  # a recurrent layer stepping through a long sequence, say
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            x = x * 1.0
        return x

    handlers = {s: signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGPROF)}
    t0 = time.monotonic()
    assert size_on_meta(_reference(slow), 7, limit_s=0.2) is None
    assert time.monotonic() - t0 < 20
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_size_on_meta_budgets_cpu_time_not_waiting():
    """A forward that waits (as one does on a host whose cores are all busy) uses none of its
    CPU budget: meta still tells its shapes. One that waits past WALL_BACKSTOP times the budget
    is stopped all the same."""
    def waits(x, seconds):
        time.sleep(seconds)
        return x * 2.0

    sized = size_on_meta(_reference(lambda x: waits(x, 0.5)), 7, limit_s=0.2)
    assert sized is not None and sized[1][0].shape == (4, 8)
    t0 = time.monotonic()
    assert size_on_meta(_reference(lambda x: waits(x, 30)), 7, limit_s=0.1) is None
    assert time.monotonic() - t0 < 0.1 * WALL_BACKSTOP + 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_size_on_meta_tells_shapes():
    sample, outs = size_on_meta(_reference(lambda x: torch.cat([x, x])), 7)
    assert [t.shape for t in sample] == [(4, 8)] and [t.shape for t in outs] == [(8, 8)]
    assert all(t.device.type == "meta" for t in sample + outs)


def test_size_on_meta_puts_back_a_mode_the_forward_left_entered_and_refuses():
    def leaves_a_mode(x):
        TorchFunctionMode().__enter__()
        return x

    depth = torch._C._len_torch_function_stack()
    assert size_on_meta(_reference(leaves_a_mode), 7) is None
    assert torch._C._len_torch_function_stack() == depth
    assert torch.randn(2).device.type == "cpu"


def test_size_on_meta_refuses_what_it_cannot_stop_or_trust():
    # off the main thread no timer can stop it: get_inputs is not even drawn
    drawn, got = [], []
    ref = _reference(lambda x: x, inputs=lambda: drawn.append(1) or [torch.randn(4, 8)])
    t = threading.Thread(target=lambda: got.append(size_on_meta(ref, 7)))
    t.start()
    t.join(30)
    assert got == [None] and drawn == []
    # an output that is not a tensor; a forward that makes a real tensor
    assert size_on_meta(_reference(lambda x: 3), 7) is None
    assert size_on_meta(_reference(lambda x: torch.zeros(2, device="cpu")), 7) is None
