"""Tests of the Python worker (`python -m kcv.worker`) driven over its protocol by a small
client (worker_client.py) that plays kcv's part, without kcv._core: requests and error replies,
the kernelbench load (problem description, constants, weight copy, load-error classes), the
typed tasks (draw, reference64, reference32, run) against values computed here with torch,
strided views, bad outputs, and the pickle load kind. Task validation, semantics and facts have
test_worker_tasks.py and test_worker_facts.py. One worker serves most tests (each test loads
what it needs); tests of the bare protocol use workers that never import torch."""

import base64
import json
import os
import pickle

import pytest

torch = pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from worker_client import Arg, WorkerClient, draw, pickled_add, ref32, ref64, run  # noqa: E402

F32, F64 = torch.float32, torch.float64


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kcv-cache"))


@pytest.fixture
def bare():
    c = WorkerClient()
    yield c
    c.close()


def load(worker, cache_dir, role, ref, cand=None, **extra):
    fields = dict(kind="kernelbench", role=role, reference_code=ref, seed=7,
                  cache_dir=cache_dir, device="cpu", **extra)
    if cand is not None:
        fields["candidate_code"] = cand
    return worker.load(**fields)


# --- the bare protocol ---------------------------------------------------------------------

def test_hello_says_protocol_1_and_sequential_calls(bare):
    hello = bare.hello()
    assert hello["protocol"] == 1
    assert hello["capabilities"]["concurrent_calls"] is False
    assert set(hello["capabilities"]["load_kinds"]) == {"kernelbench", "pickle"}


def test_hello_with_another_protocol_is_refused(bare):
    reply = bare.request({"type": "hello", "protocol": 2})
    assert reply["type"] == "error" and "protocol 2" in reply["message"]


def test_malformed_and_unknown_requests_get_error_replies_and_the_worker_goes_on(bare):
    assert bare.request("this is not json")["type"] == "error"
    assert "frobnicate" in bare.request({"type": "frobnicate"})["message"]
    assert bare.hello()["type"] == "hello"


def test_call_before_load_is_an_error_naming_the_call(bare):
    reply = bare.request({"type": "call", "id": 41})
    assert reply == {"type": "error", "id": 41, "message": "call before a successful load"}


def test_unknown_load_kind_is_a_bad_request(bare):
    reply = bare.load(kind="shared_library", path="/x.so")
    assert reply["type"] == "error" and reply["message"].startswith("bad_request: kind:")


def test_shutdown_says_bye_and_exits_0(bare):
    assert bare.shutdown() == {"type": "bye"}
    assert bare.proc.returncode == 0


def test_end_of_input_ends_the_worker(bare):
    bare.proc.stdin.close()
    assert bare.proc.wait(30) == 0


# --- reference role ------------------------------------------------------------------------

def test_reference_load_describes_inputs_outputs_and_constants(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.ADD)
    assert reply["type"] == "loaded", reply
    assert (reply["name"], reply["op"], reply["role"], reply["device"]) == \
        ("Model", "kernelbench", "reference", "cpu")
    problem = dict(reply["problem"])
    assert set(problem.pop("facts")) == {"constants", "reductions", "minmax", "stochastic",
                                         "repeatable", "ops", "trial_seeds"}
    assert problem == {
        "inputs": [{"kind": "tensor", "dtype": "f32", "shape": [4, 8]},
                   {"kind": "tensor", "dtype": "f32", "shape": [4, 8]},
                   {"kind": "scalar", "value": 0.5}],
        "outputs": [{"dtype": "f32", "shape": [4, 8]}],
        "constants": {"ROWS": 4, "COLS": 8, "SIZE": 32}}


def test_load_echoes_the_kernel_name_and_op_it_was_given(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.ADD, kernel="row-17", op="add")
    assert (reply["name"], reply["op"]) == ("row-17", "add")


def test_constants_rescale_shapes_and_the_constants_derived_from_them(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.ADD, constants={"ROWS": 2, "COLS": 3})
    assert reply["problem"]["inputs"][0]["shape"] == [2, 3]
    assert reply["problem"]["outputs"] == [{"dtype": "f32", "shape": [2, 3]}]
    assert reply["problem"]["constants"] == {"ROWS": 2, "COLS": 3, "SIZE": 6}


def test_a_constant_the_reference_does_not_assign_is_a_bad_request(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.ADD, constants={"DEPTH": 2})
    assert reply["type"] == "error"
    assert reply["message"].startswith("bad_request: constants.DEPTH:")


def test_reference64_runs_the_reference_in_float64(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.ADD)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F64, (4, 8))], ref64())
    # its own timings beside the status: the task's seconds, of them the model's run
    timing = {k: r.reply[k] for k in ("task_s", "forward_s")}
    assert r.reply == {"type": "result", "id": r.reply["id"], "status": "ok", **timing}
    assert 0 < timing["forward_s"] <= timing["task_s"] < 60
    assert torch.equal(r.outputs[0], x.double() + 3.0 * y.double() * 0.5)
    assert all(r.inputs_unchanged)


def test_draw_makes_the_inputs_of_a_seed(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.ADD, constants={"ROWS": 3})
    r = worker.call([], [(F32, (3, 8)), (F32, (3, 8))], draw(123))
    ref = kb.module(kb.ADD)
    ref.ROWS = 3
    torch.manual_seed(123)
    want = ref.get_inputs()
    assert r.reply["status"] == "ok"
    assert torch.equal(r.outputs[0], want[0]) and torch.equal(r.outputs[1], want[1])


def test_a_draw_into_outputs_of_the_wrong_count_is_a_bad_output(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.ADD)
    r = worker.call([], [(F32, (4, 8))], draw(1))
    assert r.reply["status"] == "bad_output"
    assert r.reply["message"] == "expected 1 output tensor(s), got 2"


def test_reference32_runs_the_reference_at_its_own_precision_into_f64_buffers(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.LINEAR)
    x = torch.randn(5, 6)
    r = worker.call([x], [(F64, (5, 7))], ref32())
    ref = kb.module(kb.LINEAR)
    torch.manual_seed(7)
    model = ref.Model(*ref.get_init_inputs())
    with torch.no_grad():
        assert torch.equal(r.outputs[0], model(x).double())
        r64 = worker.call([x], [(F64, (5, 7))], ref64())
        assert torch.equal(r64.outputs[0], model.double()(x.double()))


def test_integer_inputs_pass_through_and_0d_outputs_work(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.XENT)
    assert [i["dtype"] for i in reply["problem"]["inputs"]] == ["f32", "i64"]
    assert reply["problem"]["outputs"] == [{"dtype": "f32", "shape": []}]
    logits, targets = torch.randn(6, 5), torch.tensor([0, 4, 2, 2, 1, 3])
    r = worker.call([logits, targets], [(F64, ())], ref64())
    assert r.reply["status"] == "ok", r.reply
    want = torch.nn.functional.cross_entropy(logits.double(), targets)
    assert torch.equal(r.outputs[0], want)


def test_tuple_outputs_are_flattened_with_their_own_dtypes(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.MULTI)
    assert reply["problem"]["outputs"] == [{"dtype": "f32", "shape": [3]},
                                           {"dtype": "i64", "shape": [3]}]
    x = torch.randn(3, 4)
    r = worker.call([x], [(F64, (3,)), (torch.int64, (3,))], ref64())
    assert torch.equal(r.outputs[0], x.double().sum(dim=1))
    assert torch.equal(r.outputs[1], x.argmax(dim=1))


def test_the_candidate_role_refuses_the_reference_tasks(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_CANDIDATE)
    for task in (draw(1), ref32(), ref64(), {"kind": "forget", "seed": 1}):
        reply = worker.call([], [(F32, (4, 8))], task).reply
        assert reply["type"] == "error", reply
        assert f"task.kind: '{task['kind']}' is not served by the candidate role" in \
            reply["message"]


def test_the_reference_role_refuses_the_candidate_tasks(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.ADD)
    for task in (run(), {"kind": "describe"}):
        reply = worker.call([], [], task).reply
        assert reply["type"] == "error"
        assert "is not served by the reference role" in reply["message"], reply


# --- candidate role ------------------------------------------------------------------------

def assert_linear_candidate_runs_with_the_reference_weights(worker, cache_dir, candidate,
                                                             copied):
    """Loads `candidate` against kb.LINEAR and checks the weights copied (copied, total) and
    that it computes the reference's output with the reference's parameters."""
    reply = load(worker, cache_dir, "candidate", kb.LINEAR, candidate)
    assert reply["type"] == "loaded", reply
    assert (reply["weights_copied"], reply["weights_total"]) == copied
    assert "problem" not in reply
    x = torch.randn(5, 6)
    r = worker.call([x], [(F32, (5, 7))], run())
    ref = kb.module(kb.LINEAR)
    torch.manual_seed(7)
    with torch.no_grad():
        want = ref.Model(*ref.get_init_inputs())(x)
    assert r.reply["status"] == "ok", r.reply
    torch.testing.assert_close(r.outputs[0], want, rtol=1e-6, atol=1e-7)


# A problem whose get_inputs makes 4 TiB (a big KernelBench problem, taken to the extreme): the
# candidate's load needs only which items are tensors, so it draws on the meta device and does
# not allocate them (the reference worker, which runs the forward at load, does).
HUGE_INPUT = kb.ADD.replace("torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), 0.5",
                            "torch.randn(ROWS, COLS), torch.randn(2 ** 40), 0.5")
# A scalar drawn with .item(): no value on meta, so it is drawn again for real, under the seed.
ITEM_SCALAR = kb.ADD.replace("torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), 0.5",
                             "torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), "
                             "torch.rand(1).item()")


def test_the_candidates_load_does_not_allocate_get_inputs_tensors(worker, cache_dir):
    reply = load(worker, cache_dir, "candidate", HUGE_INPUT,
                 HUGE_INPUT.replace("class Model(", "class ModelNew("))
    assert reply["type"] == "loaded", reply


def test_a_scalar_get_inputs_draws_with_item_is_the_references_own(worker, cache_dir):
    reply = load(worker, cache_dir, "candidate", ITEM_SCALAR,
                 ITEM_SCALAR.replace("class Model(", "class ModelNew("))
    assert reply["type"] == "loaded", reply
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok", r.reply
    torch.manual_seed(7)
    scale = torch.randn(4, 8), torch.randn(4, 8), torch.rand(1).item()
    torch.testing.assert_close(r.outputs[0], x + 3.0 * y * scale[2])


def test_candidate_gets_the_reference_weights_by_name_and_shape(worker, cache_dir):
    assert_linear_candidate_runs_with_the_reference_weights(worker, cache_dir,
                                                            kb.LINEAR_CANDIDATE, (2, 3))


def test_reference_weights_are_copied_into_inference_tensors(worker, cache_dir):
    assert_linear_candidate_runs_with_the_reference_weights(
        worker, cache_dir, kb.LINEAR_INFERENCE_CANDIDATE, (2, 2))


def test_a_triton_candidate_runs_in_the_interpreter_on_the_cpu(worker, cache_dir):
    reply = load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_TRITON)
    assert reply["type"] == "loaded" and reply["triton_interpret"] is True, reply
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok", r.reply
    assert torch.equal(r.outputs[0], x + 1.5 * y)


def test_half_precision_views_round_trip(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.HALF, kb.HALF_CANDIDATE)
    x = torch.randn(4, 4).to(torch.bfloat16)
    r = worker.call([x], [(torch.bfloat16, (4, 4))], run())
    assert r.reply["status"] == "ok" and torch.equal(r.outputs[0], x * 2 + 1)


def test_strided_broadcast_and_offset_inputs_are_read_by_stride(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_CANDIDATE)
    # x: rows padded to 11 elements behind a storage offset of 5; y: one row broadcast (stride 0)
    x = Arg(torch.randn(5 + 4 * 11), (4, 8), (11, 1), 5)
    y = Arg(torch.randn(8), (4, 8), (0, 1), 0)
    r = worker.call([x, y], [(F32, (4, 8))], run(), shift=4)
    assert r.reply["status"] == "ok", r.reply
    assert torch.equal(r.outputs[0], x.value() + 3.0 * y.value() * 0.5)
    assert r.inputs_unchanged == [True, True]


@pytest.mark.parametrize("pick,message", [
    (1, "the model returned float, not a tensor or a tuple of tensors"),
    (2, "the model returned NoneType, not a tensor or a tuple of tensors"),
    (3, "output.0: expected f32 [4, 8], got f32 [2, 8]"),
    (4, "output.0: expected f32 [4, 8], got f64 [4, 8]"),
    (5, "expected 1 output tensor(s), got 2"),
    (6, "output 1 is str, not a tensor"),
])
def test_bad_outputs_name_what_came_back(worker, cache_dir, pick, message):
    reply = load(worker, cache_dir, "candidate", kb.ADD, kb.CHOOSY)
    assert reply["type"] == "loaded", reply
    x = torch.randn(4, 8)
    x[0, 0] = pick
    r = worker.call([x, torch.randn(4, 8)], [(F32, (4, 8))], run())
    assert r.reply["status"] == "bad_output"
    assert r.reply["message"] == message


def test_an_exception_reports_its_last_traceback_line(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.CHOOSY)
    x = torch.randn(4, 8)
    x[0, 0] = 7
    r = worker.call([x, torch.randn(4, 8)], [(F32, (4, 8))], run())
    assert r.reply["status"] == "exception" and r.reply["task_s"] > 0
    assert r.reply["message"] == "ValueError: pick 7 is not supported"
    assert "pick 7 is not supported" in worker.stderr()  # the whole traceback went there


def test_a_wrong_number_of_inputs_is_an_error_reply(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_CANDIDATE)
    reply = worker.call([torch.randn(4, 8)], [(F32, (4, 8))], run()).reply
    assert reply["type"] == "error"
    assert "inputs: expected 2 tensor(s)" in reply["message"]


def test_a_view_outside_its_raw_region_is_an_error_reply(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_CANDIDATE)
    from worker_client import write_call_file  # our client writes only valid views: forge one

    path, req, _ = write_call_file([Arg.of(torch.randn(4, 8))] * 2, [(F32, (4, 8))])
    req["inputs"][0]["strides"] = [20, 1]  # rows of 20: past the 64-byte back guard
    req.update(id=99, task=run())
    try:
        reply = worker.request(req)
    finally:
        os.unlink(path)
    assert reply["type"] == "error" and reply["id"] == 99
    assert "input.0: the view reaches outside its raw region" in reply["message"]


# --- load errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("cand,prefix,detail", [
    ("import torch\nimport kcv_no_such_module_xyz\n", "import_error: candidate_code:",
     "ModuleNotFoundError"),
    ("def broken(:\n", "import_error: candidate_code:", "SyntaxError"),
    ("import torch\nclass Other: pass\n", "import_error: candidate_code:", "defines no ModelNew"),
    (kb.ADD_CANDIDATE.replace("super().__init__()", "super().__init__(); 1 / 0"),
     "init_error: candidate_code:", "ZeroDivisionError"),
])
def test_load_failures_are_classed(worker, cache_dir, cand, prefix, detail):
    reply = load(worker, cache_dir, "candidate", kb.ADD, cand)
    assert reply["type"] == "error"
    assert reply["message"].startswith(prefix) and detail in reply["message"], reply


def test_a_failing_native_build_is_a_compile_error(worker, cache_dir):
    cand = '''
import torch
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="kcv_test_broken_ext", cpp_sources="torch::Tensor f(torch::Tensor a);",
                  cuda_sources="this is not CUDA code", functions=["f"], verbose=False)
''' + kb.ADD_CANDIDATE
    reply = load(worker, cache_dir, "candidate", kb.ADD, cand)
    assert reply["type"] == "error"
    assert reply["message"].startswith("compile_error: candidate_code:"), reply


def test_a_broken_reference_is_reported_as_the_reference(worker, cache_dir):
    reply = load(worker, cache_dir, "reference", kb.ADD.replace("return [3.0]", "return [3.0"))
    assert reply["message"].startswith("import_error: reference_code: SyntaxError")
    reply = load(worker, cache_dir, "reference", kb.ADD.replace("0.5]", "0.5, undefined_name]"))
    assert reply["message"].startswith("problem_error: reference_code get_inputs(): NameError")


def test_a_reference_load_a_shape_refuses_leaves_the_worker_for_the_next_shape(bare, cache_dir):
    # kcv moves a reference worker between shapes; a shape the problem refuses must not cost a
    # new process (src/worker/session.cpp keeps a worker whose error reply says "reusable")
    refusing = kb.ADD.replace("def get_inputs():",
                              "def get_inputs():\n    assert ROWS != 3, 'no three rows'")
    assert bare.hello()["type"] == "hello"
    reply = load(bare, cache_dir, "reference", refusing, constants={"ROWS": 3})
    assert reply["type"] == "error" and reply["class"] == "problem_error"
    assert reply["reusable"] is True, reply
    reply = load(bare, cache_dir, "reference", refusing, constants={"ROWS": 5})
    assert reply["type"] == "loaded", reply
    assert reply["problem"]["inputs"][0]["shape"] == [5, 8]


def test_a_candidate_load_that_fails_is_not_reusable(worker, cache_dir):
    reply = load(worker, cache_dir, "candidate", kb.ADD, "def broken(:\n")
    assert reply["type"] == "error" and "reusable" not in reply


def test_missing_fields_are_bad_requests_naming_the_field(worker):
    reply = worker.load(kind="kernelbench", role="judge", reference_code="")
    assert reply["message"].startswith("bad_request: role:")
    reply = worker.load(kind="kernelbench", role="candidate", reference_code=kb.ADD)
    assert reply["message"] == "bad_request: candidate_code: missing or not a string"


# --- pickle kind ---------------------------------------------------------------------------

def test_pickle_kind_calls_a_plain_callable(worker):
    payload = base64.b64encode(pickle.dumps(pickled_add)).decode()
    here = os.path.dirname(os.path.abspath(__file__))
    reply = worker.load(kind="pickle", payload=payload, sys_path=[here], op="add")
    assert (reply["type"], reply["name"], reply["op"]) == ("loaded", "pickled_add", "add"), reply
    a, b = torch.randn(3, 5), torch.randn(3, 5)
    r = worker.call([a, b], [(F32, (3, 5))])
    assert r.reply["status"] == "ok" and torch.equal(r.outputs[0], a + b)
    bad = worker.call([a, b], [(F64, (3, 5))])
    assert bad.reply["status"] == "bad_output"


def test_every_reply_of_the_shared_worker_was_one_json_line(worker):
    assert worker.lines and all(isinstance(json.loads(line), dict) for line in worker.lines)


class _Module:
    def __init__(self, get_inputs):
        self.get_inputs = get_inputs


def test_the_meta_draw_is_refused_where_it_could_differ_from_a_real_one():
    from kcv.worker.meta import meta_sample as _meta_sample

    plain = _meta_sample(_Module(lambda: [torch.randn(1 << 40), 3, (0.5, "x")]), 7)
    assert plain is not None and plain[0].device.type == "meta" and plain[1:] == [3, (0.5, "x")]
    assert _meta_sample(_Module(lambda: [torch.randn(3), torch.rand(1).item()]), 7) is None
    # an explicit device draws from the real generator: the draws after it would differ
    assert _meta_sample(_Module(lambda: [torch.randn(3), torch.rand(1, device="cpu")]), 7) is None
    assert _meta_sample(_Module(lambda: [torch.randn(3), [torch.randn(2)]]), 7) is None


def test_a_torch_function_mode_left_entered_by_get_inputs_is_popped():
    from torch.overrides import TorchFunctionMode

    from kcv.worker.meta import meta_sample as _meta_sample

    def leaks():
        TorchFunctionMode().__enter__()
        return [torch.randn(3)]

    depth = torch._C._len_torch_function_stack()
    assert _meta_sample(_Module(leaks), 7) is None
    assert torch._C._len_torch_function_stack() == depth
    assert torch.randn(1).device.type == "cpu"
