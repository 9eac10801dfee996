"""The Python worker's typed tasks (docs/06_worker_protocol.md §7.3-7.5), over the protocol
(worker_client.py) and, for the pieces a CPU cannot reach through a call (the CUDA guards, the
sticky-error exit), in this process:

- validation: unknown kinds and fields, wrong JSON types and the old params["mode"] are error
  replies naming the field;
- reference tasks: kept inputs (draw with keep, inputs_seed, forget), inputs keeping their
  layout (a model that refuses a padded or transposed view refuses it in reference64,
  reference32 and the candidate's run alike; strides reach the model), reference32's TF32
  flags (restored) and autocast;
- reference64's semantics: maxNum (relu, amax, max pooling drop NaN; propagate keeps it) and
  flush (1e-39 read as zero, 2e-38 kept, tiny results flushed), over the protocol and op by op
  against hand-computed values (kcv.worker.semantics);
- run: poison fills what empty factories make, concurrency runs k forwards at once into k
  copies, autotune_config pins a Triton autotuner's config (in Triton's interpreter), guards
  and shuffle on CPU are ignored, describe lists the candidate's libraries;
- the pickle load kind in both roles.
Problems are our own, written here.
"""

import base64
import os
import pickle

import pytest

torch = pytest.importorskip("torch")

import worker_client as wc  # noqa: E402
from worker_client import Arg, draw, ref32, ref64, run  # noqa: E402

F32, F64, I64 = torch.float32, torch.float64, torch.int64
NAN = float("nan")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kcv-cache"))


def load(worker, cache_dir, ref, cand=None, **extra):
    fields = dict(kind="kernelbench", role="candidate" if cand else "reference",
                  reference_code=ref, seed=7, cache_dir=cache_dir, device="cpu", **extra)
    if cand is not None:
        fields["candidate_code"] = cand
    reply = worker.load(**fields)
    assert reply["type"] == "loaded", (reply, worker.stderr()[-3000:])
    return reply


def problem(forward: str, inputs: str, *, head: str = "", init: str = "[]",
            init_args: str = "", init_body: str = "pass", cls: str = "Model") -> str:
    """A KernelBench-style source: `forward` is the body of forward(self, x...)."""
    return f'''
import torch
import torch.nn as nn
import torch.nn.functional as F
{head}

class {cls}(nn.Module):
    def __init__(self{init_args}):
        super().__init__()
        {init_body}

    def forward(self, *xs):
        {forward}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return {init}
'''


# --- validation ----------------------------------------------------------------------------

ADD = problem("return xs[0] + xs[1]", "[torch.randn(4, 8), torch.randn(4, 8)]")


@pytest.mark.parametrize("task, says", [
    (None, "task: missing or not a JSON object"),
    ({"kind": "frobnicate", "seed": 1}, "task.kind: 'frobnicate' is not one of"),
    ({"seed": 1}, "task.kind: None is not one of"),
    ({"kind": "reference64", "seed": 1, "subnormal": "flush"},
     "task.subnormal: not a field of a reference64 task"),
    ({"kind": "reference64", "seed": 1.5}, "task.seed: expected an integer, got 1.5"),
    ({"kind": "reference64", "seed": True}, "task.seed: expected an integer, got True"),
    ({"kind": "reference64", "seed": -1}, "task.seed: -1 is not in [0, "),
    ({"kind": "reference64"}, "task.seed: missing"),
    ({"kind": "reference64", "seed": 1, "nan": "maybe"},
     "task.nan: 'maybe' is not one of ['propagate', 'number']"),
    ({"kind": "reference64", "seed": 1, "inputs_seed": "3"}, "task.inputs_seed: expected an "
                                                              "integer"),
    ({"kind": "reference32", "seed": 1, "cudnn_tf32": 1}, "task.cudnn_tf32: expected a boolean"),
    ({"kind": "reference32", "seed": 1, "autocast": "fp8"}, "task.autocast: 'fp8' is not one"),
    ({"kind": "draw", "seed": 1, "keep": "yes"}, "task.keep: expected a boolean"),
])
def test_malformed_tasks_are_error_replies_naming_the_field(worker, cache_dir, task, says):
    load(worker, cache_dir, ADD)
    path, req, _ = wc.write_call_file([Arg.of(torch.randn(4, 8))] * 2, [(F64, (4, 8))])
    req.update(id=5, params={})
    if task is not None:
        req["task"] = task
    try:
        reply = worker.request(req)
    finally:
        os.unlink(path)
    assert reply["type"] == "error" and reply["id"] == 5, reply
    assert says in reply["message"], reply["message"]


@pytest.mark.parametrize("task, says", [
    (run(concurrency=0), "task.concurrency: 0 is not >= 1"),
    (run(autotune_config=-2), "task.autotune_config: -2 is not >= -1"),
    (run(poison={"f8": 1}), "task.poison.f8: not one of"),
    (run(poison={"f16": 1 << 16}), "task.poison.f16: 65536 is not an unsigned 16-bit pattern"),
    (run(poison={"f32": 1.0}), "task.poison.f32: expected an integer"),
    (run(poison=[1]), "task.poison: expected an object"),
    (run(device_guard=-1), "task.device_guard: -1 is not >= 0"),
    (run(shuffle_seed=1.0), "task.shuffle_seed: expected an integer"),
    (run(device_offset=8), "task.device_offset: 8 is not a multiple of 16 bytes"),
    (run(device_offset=4096), "task.device_offset: 4096 is not in [0, 4096)"),
    ({"kind": "describe", "seed": 1}, "task.seed: not a field of a describe task"),
])
def test_malformed_run_tasks_are_error_replies(worker, cache_dir, task, says):
    load(worker, cache_dir, ADD, ADD.replace("class Model(", "class ModelNew("))
    reply = worker.call([torch.randn(4, 8)] * 2, [(F32, (4, 8))], task).reply
    assert reply["type"] == "error" and says in reply["message"], reply


def test_params_mode_is_refused_and_params_must_be_empty(worker, cache_dir):
    load(worker, cache_dir, ADD)
    x = [torch.randn(4, 8)] * 2
    reply = worker.call(x, [(F64, (4, 8))], ref64(), params={"mode": 0}).reply
    assert reply["type"] == "error"
    assert "params.mode: numeric modes are gone" in reply["message"], reply
    reply = worker.call(x, [(F64, (4, 8))], ref64(), params={"seed": 3}).reply
    assert reply["type"] == "error" and "a task call carries no params" in reply["message"]
    assert worker.call(x, [(F64, (4, 8))], ref64()).reply["status"] == "ok"


def test_parse_fills_defaults_and_keeps_optional_fields_absent():
    from kcv.worker.tasks import parse

    t = parse({"kind": "run", "seed": 3, "shuffle_seed": None})
    assert (t.concurrency, t.autotune_config, t.device_guard, t.guard_seed) == (1, -1, 0, 0)
    assert t.poison == {} and t.shuffle_seed is None and t.inputs_seed is None
    assert t.device_offset == 0 and parse({"kind": "run", "seed": 3, "device_offset": 48}).device_offset == 48
    t = parse({"kind": "reference64", "seed": 2 ** 64 - 1})
    assert (t.nan, t.subnormals, t.seed) == ("propagate", "keep", 2 ** 64 - 1)
    assert parse({"kind": "reference32", "seed": 0}).autocast == "none"


# --- reference tasks: kept inputs, layout ---------------------------------------------------

def test_kept_inputs_serve_both_references_until_forgotten(worker, cache_dir):
    load(worker, cache_dir, ADD)
    made = worker.call([], [(F32, (4, 8)), (F32, (4, 8))], draw(11, keep=True))
    assert made.reply["status"] == "ok", made.reply
    x, y = made.outputs
    r64 = worker.call([], [(F64, (4, 8))], ref64(inputs_seed=11))
    assert r64.reply["status"] == "ok" and torch.equal(r64.outputs[0], x.double() + y.double())
    r32 = worker.call([], [(F32, (4, 8))], ref32(inputs_seed=11))
    assert r32.reply["status"] == "ok" and torch.equal(r32.outputs[0], x + y)
    carried = worker.call([x, y], [(F64, (4, 8))], ref64(inputs_seed=11)).reply
    assert carried["type"] == "error" and "carries no inputs" in carried["message"]
    assert worker.call([], [], {"kind": "forget", "seed": 11}).reply["status"] == "ok"
    gone = worker.call([], [(F64, (4, 8))], ref64(inputs_seed=11)).reply
    assert gone["status"] == "bad_output" and "task.inputs_seed: 11 names no kept" in \
        gone["message"]


def test_staged_inputs_serve_every_reference_run_of_a_probe(worker, cache_dir):
    """A probe's inputs cross once (stage) and every run names them by key; a later stage
    replaces them, and a key that is not the last stage's is bad_output (kcv sends the inputs)."""
    load(worker, cache_dir, ADD)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    assert worker.call([x, y], [], {"kind": "stage", "key": 5}).reply["status"] == "ok"
    r64 = worker.call([], [(F64, (4, 8))], ref64(inputs_key=5))
    assert r64.reply["status"] == "ok" and torch.equal(r64.outputs[0], x.double() + y.double())
    r32 = worker.call([], [(F32, (4, 8))], ref32(inputs_key=5))
    assert r32.reply["status"] == "ok" and torch.equal(r32.outputs[0], x + y)
    again = worker.call([], [(F32, (4, 8))], ref32(inputs_key=5))
    assert torch.equal(again.outputs[0], r32.outputs[0])  # the staged inputs are never handed on
    carried = worker.call([x, y], [(F64, (4, 8))], ref64(inputs_key=5)).reply
    assert carried["type"] == "error" and "carries no inputs" in carried["message"]
    assert worker.call([y, x], [], {"kind": "stage", "key": 6}).reply["status"] == "ok"
    gone = worker.call([], [(F64, (4, 8))], ref64(inputs_key=5)).reply
    assert gone["status"] == "bad_output" and "task.inputs_key: 5 names no staged" in \
        gone["message"]
    swapped = worker.call([], [(F32, (4, 8))], ref32(inputs_key=6))
    assert torch.equal(swapped.outputs[0], y + x)


VIEWS_ONLY = problem("return xs[0].view(-1) * 2", "[torch.randn(4, 8)]")
PADDED = Arg(torch.arange(44, dtype=F32), (4, 8), (11, 1), 0)      # rows padded to 11
TRANSPOSED = Arg(torch.arange(32, dtype=F32), (4, 8), (1, 4), 0)   # a transposed 8 x 4


@pytest.mark.parametrize("view", [PADDED, TRANSPOSED], ids=["padded", "transposed"])
def test_a_model_that_refuses_a_layout_refuses_it_in_every_task(worker, cache_dir, view):
    load(worker, cache_dir, VIEWS_ONLY)
    for task, dtype in ((ref64(), F64), (ref32(), F32)):
        r = worker.call([view], [(dtype, (32,))], task)
        assert r.reply["status"] == "exception", r.reply
        assert "view size is not compatible" in r.reply["message"]
        ok = worker.call([view.value().contiguous()], [(dtype, (32,))], task)
        assert ok.reply["status"] == "ok" and torch.equal(ok.outputs[0],
                                                          (view.value().reshape(-1) * 2).to(dtype))
    load(worker, cache_dir, VIEWS_ONLY, VIEWS_ONLY.replace("class Model(", "class ModelNew("))
    r = worker.call([view], [(F32, (32,))], run())
    assert r.reply["status"] == "exception" and "view size is not compatible" in \
        r.reply["message"]


STRIDES = problem("return torch.tensor([float(s) for s in xs[0].stride()], "
                  "device=xs[0].device) + xs[0].sum() * 0", "[torch.randn(4, 8)]")


@pytest.mark.parametrize("view, strides", [
    (PADDED, [11.0, 1.0]), (TRANSPOSED, [1.0, 4.0]),
    (Arg(torch.randn(8), (4, 8), (0, 1), 0), [0.0, 1.0])], ids=["padded", "transposed", "bcast"])
def test_the_references_see_the_views_strides(worker, cache_dir, view, strides):
    load(worker, cache_dir, STRIDES)
    for task, dtype in ((ref64(), F64), (ref32(), F32)):
        r = worker.call([view], [(dtype, (2,))], task)
        assert r.reply["status"] == "ok", r.reply
        assert r.outputs[0].tolist() == strides


def flags_problem(*flags: str) -> str:
    """A problem whose forward returns the torch.backends flags named, as floats."""
    listed = ", ".join(f"float(torch.backends.{f})" for f in flags)
    return problem(f"return torch.tensor([{listed}]) + xs[0].sum() * 0", "[torch.randn(3)]")


FLAGS = flags_problem("cudnn.allow_tf32", "cuda.matmul.allow_tf32")


def test_reference32_sets_the_tf32_flags_for_the_call_only(worker, cache_dir):
    load(worker, cache_dir, FLAGS)
    x = [torch.randn(3)]

    def flags(**given):
        r = worker.call(x, [(F64, (2,))], ref32(**given))
        assert r.reply["status"] == "ok", r.reply
        return r.outputs[0].tolist()

    assert flags() == [0.0, 0.0]
    assert flags(cudnn_tf32=True) == [1.0, 0.0]
    assert flags() == [0.0, 0.0]
    assert flags(cudnn_tf32=True, matmul_tf32=True) == [1.0, 1.0]
    r = worker.call(x, [(F64, (2,))], ref64())
    assert r.outputs[0].tolist() == [0.0, 0.0]  # reference64: TF32 off


CUDNN = flags_problem("cudnn.deterministic", "cudnn.benchmark")


def test_the_trusted_runs_use_deterministic_cudnn(worker, cache_dir):
    load(worker, cache_dir, CUDNN)
    x = [torch.randn(3)]
    for task, dtype in ((ref64(), F64), (ref32(), F32), (ref32(cudnn_tf32=True), F32)):
        r = worker.call(x, [(dtype, (2,))], task)
        assert r.reply["status"] == "ok", r.reply
        assert r.outputs[0].tolist() == [1.0, 0.0]  # deterministic, not benchmarking


def test_the_candidates_run_keeps_torchs_cudnn_defaults(worker, cache_dir):
    load(worker, cache_dir, CUDNN, CUDNN.replace("class Model(", "class ModelNew("))
    r = worker.call([torch.randn(3)], [(F32, (2,))], run())
    assert r.reply["status"] == "ok", r.reply
    assert r.outputs[0].tolist() == [0.0, 0.0]  # the candidate runs under torch's defaults


MATMUL = problem("return torch.mm(xs[0], xs[1])", "[torch.randn(4, 5), torch.randn(5, 3)]")


@pytest.mark.parametrize("name, dtype", [("bf16", torch.bfloat16), ("f16", torch.float16)])
def test_reference32_runs_under_autocast_and_converts_into_the_views(worker, cache_dir, name,
                                                                     dtype):
    load(worker, cache_dir, MATMUL)
    a, b = torch.randn(4, 5), torch.randn(5, 3)
    r = worker.call([a, b], [(F32, (4, 3))], ref32(autocast=name))
    assert r.reply["status"] == "ok", r.reply
    with torch.autocast("cpu", dtype=dtype):
        want = torch.mm(a, b)
    assert want.dtype == dtype
    assert torch.equal(r.outputs[0], want.float())
    plain = worker.call([a, b], [(F32, (4, 3))], ref32())
    assert torch.equal(plain.outputs[0], torch.mm(a, b)) and not torch.equal(plain.outputs[0],
                                                                             want.float())


# --- reference64 semantics over the protocol ------------------------------------------------

NAN_OPS = problem("x = xs[0]\n        return (torch.relu(x), x.amax(dim=1), "
                  "F.max_pool1d(x.unsqueeze(0), 2).squeeze(0))", "[torch.randn(2, 4)]")


def test_maxnum_drops_nans_and_propagate_keeps_them(worker, cache_dir):
    load(worker, cache_dir, NAN_OPS)
    x = torch.tensor([[NAN, 1.0, -2.0, NAN], [NAN, NAN, NAN, NAN]])
    outs = [(F64, (2, 4)), (F64, (2,)), (F64, (2, 2))]
    number = worker.call([x], outs, ref64(nan="number"))
    assert number.reply["status"] == "ok", number.reply
    relu, amax, pool = number.outputs
    assert relu.tolist() == [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    assert amax[0].item() == 1.0 and amax[1].isnan()  # an all-NaN row stays NaN
    assert pool[0].tolist() == [1.0, -2.0] and pool[1].isnan().all()
    propagate = worker.call([x], outs, ref64(nan="propagate"))
    relu, amax, pool = propagate.outputs
    assert relu.isnan().tolist() == x.isnan().tolist()
    assert amax.isnan().all() and pool.isnan().all()


TINY = problem("return xs[0] * 1.0, xs[0] * 1e-30", "[torch.randn(4)]")


def test_flush_zeroes_subnormal_inputs_and_results_keep_does_not(worker, cache_dir):
    load(worker, cache_dir, TINY)
    x = torch.tensor([1e-39, -1e-39, 2e-38, 1e-10])  # float32: 1e-39 is subnormal, 2e-38 not
    flush = worker.call([x], [(F64, (4,)), (F64, (4,))], ref64(subnormals="flush"))
    assert flush.reply["status"] == "ok", flush.reply
    first, second = flush.outputs
    assert first.tolist() == [0.0, 0.0, x[2].item(), x[3].item()]
    assert first.signbit().tolist() == [False, True, False, False]  # zeros keep their sign
    assert second.tolist() == [0.0, 0.0, 0.0, 0.0]  # 1e-40 as a result: flushed too
    keep = worker.call([x], [(F64, (4,)), (F64, (4,))], ref64(subnormals="keep"))
    assert torch.equal(keep.outputs[0], x.double())
    assert torch.equal(keep.outputs[1], x.double() * 1e-30)


# --- reference64 semantics, op by op ---------------------------------------------------------

def _number(fn, *args):
    from kcv.worker.semantics import Semantics

    with Semantics("number", "keep"):
        return fn(*args)


def _t(values):
    return torch.tensor(values, dtype=F64)


def _same(got, want):
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    assert torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0)), (got, want)


def test_maxnum_pointwise_ops():
    F = torch.nn.functional
    x = _t([NAN, -3.0, 0.5, 9.0])
    _same(_number(torch.maximum, x, _t([1.0, NAN, NAN, 2.0])), _t([1.0, -3.0, 0.5, 9.0]))
    _same(_number(torch.minimum, x, _t([1.0, NAN, 2.0, NAN])), _t([1.0, -3.0, 0.5, 9.0]))
    _same(_number(torch.maximum, _t([NAN]), _t([NAN])), _t([NAN]))  # NaN only if both are
    _same(_number(torch.clamp, x, -1.0, 1.0), _t([1.0, -1.0, 0.5, 1.0]))  # NaN -> upper bound
    _same(_number(lambda t: torch.clamp(t, min=0.0), x), _t([0.0, 0.0, 0.5, 9.0]))
    _same(_number(lambda t: torch.clamp(t, max=2.0), x), _t([2.0, -3.0, 0.5, 2.0]))
    _same(_number(torch.clamp, x, _t([NAN, 0, 0, 0]), _t([5.0, NAN, NAN, 4.0])),
          _t([5.0, 0.0, 0.5, 4.0]))  # a NaN bound is no bound
    _same(_number(torch.relu, x), _t([0.0, 0.0, 0.5, 9.0]))
    _same(_number(F.relu6, x), _t([6.0, 0.0, 0.5, 6.0]))  # relu6 is hardtanh(0, 6): clamp
    _same(_number(F.hardtanh, x), _t([1.0, -1.0, 0.5, 1.0]))
    _same(_number(F.threshold, x, 1.0, -5.0), _t([-5.0, -5.0, -5.0, 9.0]))
    y = x.clone()
    _number(lambda t: F.relu(t, inplace=True), y)
    _same(y, _t([0.0, 0.0, 0.5, 9.0]))
    y = x.clone()
    _number(lambda t: t.clamp_(-1.0, 1.0), y)
    _same(y, _t([1.0, -1.0, 0.5, 1.0]))
    _same(torch.relu(x), _t([NAN, 0.0, 0.5, 9.0]))  # outside the mode: PyTorch's own


def test_maxnum_reductions_skip_nans_unless_all_are_nan():
    m = _t([[NAN, NAN, NAN], [NAN, 1.0, 3.0], [-float("inf"), NAN, 2.0], [4.0, 4.0, NAN]])
    _same(_number(lambda t: t.amax(dim=1), m), _t([NAN, 3.0, 2.0, 4.0]))
    _same(_number(lambda t: t.amin(dim=1), m), _t([NAN, 1.0, -float("inf"), 4.0]))
    _same(_number(lambda t: t.amax(dim=(0, 1)), m), _t(4.0))
    values, indices = _number(lambda t: t.max(dim=1), m)
    _same(values, _t([NAN, 3.0, 2.0, 4.0]))
    assert indices.tolist() == [0, 2, 2, 0]  # all-NaN: 0; ties: the first
    values, indices = _number(lambda t: t.min(dim=1, keepdim=True), m)
    assert values.shape == (4, 1) and indices[:, 0].tolist() == [0, 1, 0, 0]
    _same(_number(lambda t: t.max(), m), _t(4.0))
    _same(_number(lambda t: t.min(), m), _t(-float("inf")))
    _same(_number(lambda t: t.max(), _t([NAN, NAN])), _t(NAN))
    assert _number(lambda t: t.argmax(), m).item() == 9  # flat index of the first 4.0
    assert _number(lambda t: t.argmin(dim=0), m).tolist() == [2, 1, 2]
    assert _number(lambda t: t.argmax(dim=None, keepdim=True), m).shape == (1, 1)
    clean = torch.randn(5, 6, dtype=F64)  # no NaN: PyTorch's result, bit for bit
    assert torch.equal(_number(lambda t: t.max(dim=1).indices, clean), clean.max(dim=1).indices)
    assert torch.equal(_number(lambda t: t.amax(dim=0), clean), clean.amax(dim=0))


def test_maxnum_max_pooling_reads_nan_as_minus_infinity_unless_the_window_is_all_nan():
    F = torch.nn.functional
    x1 = _t([[[NAN, 1.0, NAN, NAN, -2.0, NAN]]])
    _same(_number(F.max_pool1d, x1, 2), _t([[[1.0, NAN, -2.0]]]))
    x2 = _t([[[[NAN, NAN, 1.0, NAN], [NAN, NAN, NAN, 3.0]]]])
    _same(_number(F.max_pool2d, x2, 2), _t([[[[NAN, 3.0]]]]))
    values, indices = _number(lambda t: F.max_pool2d(t, 2, return_indices=True), x2)
    assert indices[0, 0, 0, 1].item() == 7  # where the 3.0 is
    x3 = x2.unsqueeze(2).expand(1, 1, 2, 2, 4).contiguous()
    _same(_number(F.max_pool3d, x3, 2), _t([[[[[NAN, 3.0]]]]]))
    _same(_number(F.adaptive_max_pool2d, x2, (1, 2)), _t([[[[NAN, 3.0]]]]))
    _same(F.max_pool2d(x2, 2), _t([[[[NAN, NAN]]]]))  # PyTorch's own propagates


def test_flush_reads_and_writes_subnormals_as_signed_zeros_and_leaves_inputs_alone():
    from kcv.worker.semantics import Semantics

    x = _t([1e-39, -1e-39, 2e-38, -3e-38, 0.0])
    with Semantics("propagate", "flush"):
        doubled = x * 2.0
        tiny = _t([1e-20]) * _t([1e-20])  # 1e-40: a result in the flushed range
        view = x[1:]  # views compute nothing: untouched
        y = x.clone()
        y.mul_(1.0)  # in place: the written tensor is flushed before and after
    assert doubled.tolist() == [0.0, 0.0, 4e-38, -6e-38, 0.0]
    assert doubled.signbit().tolist() == [False, True, False, True, False]
    assert tiny.tolist() == [0.0]
    assert view[0].item() == -1e-39
    assert y.tolist() == [0.0, 0.0, 2e-38, -3e-38, 0.0] and y.signbit()[1]
    assert x[0].item() == 1e-39  # the caller's tensor keeps its values


def test_both_semantics_compose():
    from kcv.worker.semantics import Semantics

    with Semantics("number", "flush"):
        got = torch.maximum(_t([NAN, 1e-39]), _t([1e-39, NAN]))
    assert got.tolist() == [0.0, 0.0]


# --- run: poison, concurrency, autotune, guards, describe -----------------------------------

SHAPED = problem("return xs[0]", "[torch.randn(2, 4)]")
POISONED = problem('''out = torch.empty_like(xs[0])
        out[0].copy_(xs[0][0])
        ints = xs[0].new_empty((2, 3), dtype=torch.int64)
        ints[0] = 1
        strided = torch.empty_strided((2, 2), (4, 1))
        strided[:, 0] = 5.0
        return out, ints, strided''', "[torch.randn(2, 4)]", cls="ModelNew")
F32_BITS, I64_BITS = 0x7FA0BEEF, 0x7FF0DEADBEEF0001


def _bits32(t):
    """The bit patterns, unsigned (through an integer view: a Python float would quiet a
    signalling NaN)."""
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def test_poison_fills_what_empty_factories_make(worker, cache_dir):
    load(worker, cache_dir, SHAPED, POISONED)
    x = torch.randn(2, 4)
    outs = [(F32, (2, 4)), (I64, (2, 3)), (F32, (2, 2))]
    r = worker.call([x], outs, run(poison={"f32": F32_BITS, "i64": I64_BITS}))
    assert r.reply["status"] == "ok", r.reply
    out, ints, strided = r.outputs
    assert torch.equal(out[0], x[0]) and _bits32(out[1]) == [F32_BITS] * 4
    assert ints[0].tolist() == [1, 1, 1] and ints[1].tolist() == [I64_BITS] * 3
    assert strided[:, 0].tolist() == [5.0, 5.0] and _bits32(strided[:, 1]) == [F32_BITS] * 2
    plain = worker.call([x], outs, run())  # no poison: the written parts as ever
    assert plain.reply["status"] == "ok" and torch.equal(plain.outputs[0][0], x[0])


def test_poison_patterns_are_written_bit_for_bit_per_dtype():
    from kcv.worker.poison import Poison

    with Poison({"bf16": 0x7FC1, "f16": 0xFE01, "f64": 0xFFF8000000000001, "i32": 0x80000000}):
        bf, hf = torch.empty(3, dtype=torch.bfloat16), torch.empty(2, 2, dtype=torch.float16)
        d, i = torch.empty(2, dtype=F64), torch.empty_like(torch.zeros(3, dtype=torch.int32))
        b = torch.empty(4, dtype=torch.bool)
    assert bf.view(torch.int16).tolist() == [0x7FC1] * 3
    assert hf.view(torch.int16).reshape(-1).tolist() == [0xFE01 - (1 << 16)] * 4
    assert d.view(torch.int64).tolist() == [0xFFF8000000000001 - (1 << 64)] * 2
    assert i.tolist() == [-(1 << 31)] * 3
    assert b.dtype == torch.bool  # no pattern: left alone


CONCURRENT = '''
import threading
import torch
import torch.nn as nn

BARRIER = threading.Barrier(3, timeout=20)
LOCK = threading.Lock()
CALLS = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        with LOCK:
            CALLS[0] += 1
            mine = CALLS[0]
        if x[0, 0].item() > 100:
            BARRIER.wait()  # only passes when three runs are in flight together
        return x + mine
'''


def test_concurrency_runs_the_forward_k_times_at_once_into_k_copies(worker, cache_dir):
    load(worker, cache_dir, SHAPED, CONCURRENT)
    x = torch.randn(2, 4)
    x[0, 0] = 101.0
    r = worker.call([x], [(F32, (2, 4))] * 3, run(concurrency=3), timeout=60)
    assert r.reply["status"] == "ok", r.reply
    offsets = sorted({round((o - x).mean().item()) for o in r.outputs})
    assert len(offsets) == 3 and offsets == list(range(offsets[0], offsets[0] + 3))
    for o, k in zip(r.outputs, [round((o - x).mean().item()) for o in r.outputs]):
        assert torch.equal(o, x + k)
    one = worker.call([x * 0], [(F32, (2, 4))], run())
    assert one.reply["status"] == "ok"
    bad = worker.call([x], [(F32, (2, 4))] * 3, run(concurrency=2)).reply
    assert bad["type"] == "error" and "task.concurrency: 3 output view(s) are not 2 copies" in \
        bad["message"]


AUTOTUNED = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8}),
                          triton.Config({"BLOCK": 16})], key=["n"])
@triton.jit
def fill_block(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + BLOCK, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        if x[0].item() >= 0:
            n = x.numel()
            fill_block[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, n)
        return out, torch.tensor([float(len(fill_block.configs))])
'''
AUTOTUNED_REF = problem("return xs[0] * 0, torch.ones(1)", "[torch.randn(32)]")


def test_autotune_config_pins_every_autotuner_to_one_config(worker, cache_dir):
    reply = load(worker, cache_dir, AUTOTUNED_REF, AUTOTUNED)
    assert reply["triton_interpret"] is True
    assert [a["name"] for a in reply["autotuners"]] == ["fill_block"]
    configs = reply["autotuners"][0]["configs"]
    assert [c["kwargs"] for c in configs] == [{"BLOCK": 4}, {"BLOCK": 8}, {"BLOCK": 16}]
    assert all(c["num_warps"] == 4 for c in configs)
    x = torch.rand(32)
    for k, block in ((0, 4), (1, 8), (2, 16), (9, 16)):  # past the end: the last
        r = worker.call([x], [(F32, (32,)), (F32, (1,))], run(autotune_config=k))
        assert r.reply["status"] == "ok", r.reply
        assert r.outputs[0].tolist() == [float(block)] * 32 and r.outputs[1].item() == 1.0
    x[0] = -1.0  # no launch (the interpreter cannot time configs): only the count
    r = worker.call([x], [(F32, (32,)), (F32, (1,))], run())
    assert r.reply["status"] == "ok" and r.outputs[1].item() == 3.0  # the list is back


DESCRIBED = '''
import os

_dir = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "fake_ext")
os.makedirs(_dir, exist_ok=True)
open(os.path.join(_dir, "fake_ext.so"), "wb").close()
open(os.path.join(_dir, "build.ninja"), "w").close()
''' + AUTOTUNED


def test_describe_lists_the_candidates_libraries_and_no_triton_kernels_when_interpreted(
        worker, cache_dir):
    from kcv.worker.problem import extensions_dir

    load(worker, cache_dir, AUTOTUNED_REF, DESCRIBED)
    r = worker.call([], [], {"kind": "describe"})
    assert r.reply["status"] == "ok", r.reply
    lib = os.path.join(extensions_dir(cache_dir, DESCRIBED), "fake_ext", "fake_ext.so")
    assert r.reply["device_code"] == {"libraries": [lib], "triton": []}
    bad = worker.call([torch.randn(32)], [], {"kind": "describe"}).reply
    assert bad["type"] == "error" and "a describe task carries none" in bad["message"]


def test_device_guards_and_shuffle_are_cuda_only_and_ignored_on_the_cpu(worker, cache_dir):
    load(worker, cache_dir, SHAPED, SHAPED.replace("class Model(", "class ModelNew("))
    x = torch.randn(2, 4)
    r = worker.call([x], [(F32, (2, 4))], run(device_guard=64, guard_seed=3, shuffle_seed=5))
    assert r.reply == {"type": "result", "id": r.reply["id"], "status": "ok",
                       "task_s": r.reply["task_s"],
                       "forward_s": r.reply["forward_s"]}  # no device_guards field on the CPU
    assert 0 <= r.reply["forward_s"] <= r.reply["task_s"]
    assert torch.equal(r.outputs[0], x)


def test_guard_bands_report_the_first_changed_byte():
    from kcv.worker import guards

    view = torch.arange(12, dtype=F32).reshape(3, 4)[:, :3]  # padded rows
    (g,) = guards.guarded_copies([view], "cpu", 16, 9)
    assert torch.equal(g.tensor, view) and g.tensor.stride() == view.stride()
    assert g.tensor.data_ptr() % 256 == g.buffer.data_ptr() % 256  # the front band: 256 bytes
    assert guards.changed([g]) == []
    g.buffer[g.front - 3] ^= 0xFF
    g.buffer[g.front + g.data_bytes + 5] ^= 0xFF
    assert guards.changed([g]) == [{"input": 0, "first": -3}]
    g.buffer[g.front - 3] ^= 0xFF
    assert guards.changed([None, g]) == [{"input": 1, "first": g.data_bytes + 5}]
    assert (guards.shuffle_size(0), guards.shuffle_size(63), guards.shuffle_size(64)) == \
        (1 << 20, 64 << 20, 1 << 20)
    assert torch.equal(guards.shuffle_block(5, "cpu"), guards.shuffle_block(5, "cpu"))


def test_a_sticky_cuda_error_is_reported_and_ends_the_worker(monkeypatch):
    from kcv.worker import candidate

    side = candidate.CandidateSide(lambda: None, "cuda", {}, None, list)
    monkeypatch.setattr(candidate, "_sync", lambda: None)
    assert side.after_exception() == "" and side.exit_status is None

    def broken():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(candidate, "_sync", broken)
    said = side.after_exception()
    assert "an illegal memory access" in said and "exits with status 3" in said
    assert side.exit_status == 3
    assert candidate.CandidateSide(lambda: None, "cpu", {}, None, list).after_exception() == ""


def test_the_server_exits_with_the_loaded_exit_status_after_the_reply(monkeypatch):
    import types

    from kcv.worker import calls, serve
    from kcv.worker.channel import Channel

    r, w = os.pipe()
    server = serve.Server(Channel(os.open(os.devnull, os.O_RDONLY), w))
    server.loaded = types.SimpleNamespace(exit_status=3)
    monkeypatch.setattr(calls, "serve_call", lambda loaded, req: {"type": "result", "id": 4,
                                                                  "status": "exception"})

    class Exited(Exception):
        pass

    def exit_(status):
        raise Exited(status)

    monkeypatch.setattr(serve.os, "_exit", exit_)
    with pytest.raises(Exited) as e:
        server.call({"type": "call", "id": 4})
    assert e.value.args == (3,)
    assert os.read(r, 1000).decode().strip() == '{"type": "result", "id": 4, "status": "exception"}'
    os.close(r)
    os.close(w)


# --- pickle kind -----------------------------------------------------------------------------

def _b64(obj) -> str:
    return base64.b64encode(pickle.dumps(obj)).decode()


def test_a_pickled_reference_serves_the_reference_tasks(worker):
    x = torch.randn(3, 4)
    reply = worker.load(kind="pickle", role="reference", payload=_b64(wc.pickled_rowsum),
                        sys_path=[HERE], inputs=_b64([x]), op="rowsum")
    assert reply["type"] == "loaded", reply
    p = reply["problem"]
    assert (p["inputs"], p["outputs"], p["constants"]) == (
        [{"kind": "tensor", "dtype": "f32", "shape": [3, 4]}], [{"dtype": "f32", "shape": [3]}],
        {})
    assert p["facts"]["constants"] == [] and p["facts"]["reductions"] == [
        {"op": "aten.sum.dim_IntList", "kind": "sum", "length": 4, "constant": ""}]
    for seed in (5, 9):  # the given inputs, whatever the seed
        made = worker.call([], [(F32, (3, 4))], draw(seed, keep=True))
        assert made.reply["status"] == "ok" and torch.equal(made.outputs[0], x)
    r64 = worker.call([], [(F64, (3,))], ref64(inputs_seed=9))
    assert r64.reply["status"] == "ok" and torch.equal(r64.outputs[0], x.double().sum(dim=1))
    r32 = worker.call([x], [(F32, (3,))], ref32())
    assert torch.equal(r32.outputs[0], x.sum(dim=1))
    assert worker.call([], [], {"kind": "forget", "seed": 9}).reply["status"] == "ok"
    assert worker.call([], [(F64, (3,))], ref64(inputs_seed=9)).reply["status"] == "bad_output"
    refused = worker.call([x], [(F32, (3,))], run()).reply
    assert refused["type"] == "error" and "not served by the reference role" in refused["message"]


def test_a_pickled_module_reference_runs_widened_in_float64(worker):
    import copy

    x = torch.randn(2, 4)
    model = wc.PickledAffine()
    reply = worker.load(kind="pickle", role="reference", payload=_b64(model), sys_path=[HERE],
                        inputs=_b64([x]))
    assert reply["type"] == "loaded", reply
    r = worker.call([x], [(F64, (2, 4))], ref64())
    wide = copy.deepcopy(model).double()
    wide.shift = model.shift.double()
    with torch.no_grad():
        assert torch.equal(r.outputs[0], wide(x.double()))


def test_a_pickled_candidate_serves_run_and_describe_and_passes_params_if_asked(worker):
    a = torch.randn(3, 5)
    reply = worker.load(kind="pickle", payload=_b64(wc.pickled_scaled), sys_path=[HERE])
    assert reply["type"] == "loaded" and reply["role"] == "candidate" and reply["autotuners"] == []
    assert torch.equal(worker.call([a], [(F32, (3, 5))], run()).outputs[0], a)
    r = worker.call([], [], {"kind": "describe"})
    assert r.reply["device_code"]["triton"] == []
    refused = worker.call([a], [(F32, (3, 5))], run(), params={"scale": 2.0}).reply
    assert refused["type"] == "error" and "a task call carries no params" in refused["message"]
    worker.load(kind="pickle", payload=_b64(wc.pickled_scaled), sys_path=[HERE], pass_params=True)
    r = worker.call([a], [(F32, (3, 5))], run(), params={"scale": 2.0})
    assert r.reply["status"] == "ok" and torch.equal(r.outputs[0], a * 2.0)
    assert worker.call([a], [(F32, (3, 5))], run(), params={"mode": 0}).reply["type"] == "error"
