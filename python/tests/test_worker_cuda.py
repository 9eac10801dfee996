"""GPU tests of the Python worker (skipped without CUDA): the candidate on device "cuda" gets
device copies of kcv's input views with their strides and padding kept, in-place writes on the
device come back to kcv's input bytes, side-stream work is finished before the output copy, the
float64 reference runs on the device, and a load_inline CUDA candidate of our own compiles (into
cache_dir) and runs. The run task's CUDA paths: device guard bands report an out-of-bounds
Triton store, concurrency runs on streams, poison and autotune_config work on compiled
kernels, describe reports compiled Triton kernels' metadata, and a sticky device error ends
the worker with status 3 after its reply. Run on a GPU machine:
  PYTHONPATH=python python3 -m pytest python/tests/test_worker_cuda.py
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kb_problems as kb  # noqa: E402
import test_worker_tasks as tasks  # noqa: E402 (its problems, run here on the device)
from worker_client import Arg, WorkerClient, ref64, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
F32, F64 = torch.float32, torch.float64

CUDA_ADD = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>

__global__ void axpy(const float* x, const float* y, float* out, float coef, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + coef * y[i];
}

torch::Tensor axpy_cuda(torch::Tensor x, torch::Tensor y, double coef) {
  auto xc = x.contiguous(), yc = y.contiguous();
  auto out = torch::empty_like(xc);
  long n = xc.numel();
  axpy<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), yc.data_ptr<float>(),
                                 out.data_ptr<float>(), (float)coef, n);
  return out;
}
"""

DECL = "torch::Tensor axpy_cuda(torch::Tensor x, torch::Tensor y, double coef);"
ext = load_inline(name="kcv_test_cuda_axpy", cpp_sources=DECL, cuda_sources=SOURCE, functions=["axpy_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        return ext.axpy_cuda(x, y, self.alpha * scale)
'''


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kcv-cuda-cache"))


def load(worker, cache_dir, role, ref, cand=None, timeout=120.0):
    fields = dict(kind="kernelbench", role=role, reference_code=ref, seed=3, device="cuda",
                  cache_dir=cache_dir)
    if cand is not None:
        fields["candidate_code"] = cand
    reply = worker.load(timeout=timeout, **fields)
    assert reply["type"] == "loaded" and reply["device"] == "cuda", (reply, worker.stderr())
    assert reply["triton_interpret"] is False
    return reply


def hostile(name):
    with open(os.path.join(HERE, "hostile", name + ".py"), encoding="utf-8") as f:
        return f.read()


def test_strided_inputs_keep_their_layout_on_the_device(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_CANDIDATE)
    x = Arg(torch.randn(5 + 4 * 11), (4, 8), (11, 1), 5)
    y = Arg(torch.randn(8), (4, 8), (0, 1), 0)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok", r.reply
    assert torch.equal(r.outputs[0], x.value() + 3.0 * y.value() * 0.5)
    assert r.inputs_unchanged == [True, True]


def test_in_place_writes_on_the_device_reach_the_input_bytes(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, hostile("mutate_inputs"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok" and r.inputs_unchanged == [False, True]


def test_side_stream_work_is_finished_before_the_copy(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, hostile("side_stream"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok"
    torch.testing.assert_close(r.outputs[0], x + 1.5 * y)


def test_the_float64_reference_runs_on_the_device(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.LINEAR)
    x = torch.randn(5, 6)
    r = worker.call([x], [(F64, (5, 7))], ref64(3))
    ref = kb.module(kb.LINEAR)
    torch.manual_seed(3)
    model = ref.Model(*ref.get_init_inputs()).double()
    with torch.no_grad():
        torch.testing.assert_close(r.outputs[0], model(x.double()), rtol=1e-12, atol=1e-14)


def test_a_load_inline_cuda_candidate_compiles_and_runs(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, CUDA_ADD, timeout=400.0)
    assert os.path.isdir(os.path.join(cache_dir, "torch_extensions"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], run())
    assert r.reply["status"] == "ok", r.reply
    torch.testing.assert_close(r.outputs[0], x + 1.5 * y)


# A Triton candidate whose mask is off by one: it stores one element past its input's end.
OFF_BY_ONE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) - 1.0, mask=offs <= n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 2
        zero_kernel[(1,)](x, x.numel(), BLOCK=64)
        return out
'''
WILD_STORE = OFF_BY_ONE.replace("x_ptr + offs,", "x_ptr + offs + (1 << 40),")


def test_device_guards_report_a_store_past_the_input(worker, cache_dir):
    load(worker, cache_dir, "candidate", tasks.SHAPED, OFF_BY_ONE)
    x = torch.randn(2, 4)
    r = worker.call([x], [(F32, (2, 4))], run(device_guard=64, guard_seed=11))
    assert r.reply["status"] == "ok", r.reply
    (guard,) = r.reply["device_guards"]
    assert guard["input"] == 0 and 32 <= guard["first"] < 36  # the 4 bytes after 8 floats
    assert torch.equal(r.outputs[0], x * 2)
    assert r.inputs_unchanged == [False]  # the in-bounds stores reached kcv's bytes
    plain = worker.call([x], [(F32, (2, 4))], run())
    assert "device_guards" not in plain.reply


# A candidate that returns where its input lies: data_ptr() % 512, as a float.
ADDRESS = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.full_like(x, float(x.data_ptr() % 512))
'''


def test_device_offset_moves_the_inputs_past_their_boundary(worker, cache_dir):
    """ORD-02's repetitions (run task device_offset) see their inputs at other alignments;
    without it the device copy sits on a 256-byte boundary."""
    load(worker, cache_dir, "candidate", tasks.SHAPED, ADDRESS)
    x = torch.randn(2, 4)
    at = {}
    for offset in (0, 16, 48, 112):
        r = worker.call([x], [(F32, (2, 4))], run(device_guard=256, guard_seed=3,
                                                  device_offset=offset))
        assert r.reply["status"] == "ok", r.reply
        at[offset] = int(r.outputs[0][0, 0])
    assert at[0] % 256 == 0
    assert all((at[k] - at[0]) % 256 == k for k in (16, 48, 112)), at


def test_describe_reports_the_compiled_triton_kernels(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_TRITON)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    assert worker.call([x, y], [(F32, (4, 8))], run()).reply["status"] == "ok"
    r = worker.call([], [], {"kind": "describe"})
    assert r.reply["status"] == "ok", r.reply
    (kernel,) = r.reply["device_code"]["triton"]
    assert kernel["name"] == "axpy_kernel" and kernel["num_warps"] == 4
    assert isinstance(kernel["n_regs"], int) and kernel["n_regs"] > 0
    assert isinstance(kernel["shared"], int) and kernel["n_spills"] == 0


def test_concurrency_shuffle_and_poison_on_the_device(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, kb.ADD_TRITON)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))] * 4, run(concurrency=4, shuffle_seed=123))
    assert r.reply["status"] == "ok", r.reply
    for o in r.outputs:  # the device may contract x + c * y into one fma
        torch.testing.assert_close(o, x + 1.5 * y, rtol=1e-6, atol=1e-6)
    load(worker, cache_dir, "candidate", tasks.SHAPED, tasks.POISONED)
    outs = [(F32, (2, 4)), (torch.int64, (2, 3)), (F32, (2, 2))]
    r = worker.call([torch.randn(2, 4)], outs,
                    run(poison={"f32": tasks.F32_BITS, "i64": tasks.I64_BITS}))
    assert r.reply["status"] == "ok", r.reply
    assert tasks._bits32(r.outputs[0][1]) == [tasks.F32_BITS] * 4
    assert r.outputs[1][1].tolist() == [tasks.I64_BITS] * 3


def test_autotune_config_on_compiled_kernels(worker, cache_dir):
    load(worker, cache_dir, "candidate", tasks.AUTOTUNED_REF, tasks.AUTOTUNED)
    x = torch.rand(32)
    for k, block in ((0, 4), (1, 8), (5, 16)):
        r = worker.call([x], [(F32, (32,)), (F32, (1,))], run(autotune_config=k))
        assert r.reply["status"] == "ok", r.reply
        assert r.outputs[0].tolist() == [float(block)] * 32 and r.outputs[1].item() == 1.0
    r = worker.call([x], [(F32, (32,)), (F32, (1,))], run())  # tuned for real on a GPU
    assert r.reply["status"] == "ok" and r.outputs[1].item() == 3.0
    assert r.outputs[0][0].item() in (4.0, 8.0, 16.0)


def test_the_references_semantics_and_layouts_on_the_device(worker, cache_dir):
    load(worker, cache_dir, "reference", tasks.NAN_OPS)
    x = torch.tensor([[float("nan"), 1.0, -2.0, float("nan")], [float("nan")] * 4])
    outs = [(F64, (2, 4)), (F64, (2,)), (F64, (2, 2))]
    relu, amax, pool = worker.call([x], outs, ref64(nan="number")).outputs
    assert relu.tolist() == [[0.0, 1.0, 0.0, 0.0], [0.0] * 4]
    assert amax[0].item() == 1.0 and amax[1].isnan() and pool[0].tolist() == [1.0, -2.0]
    load(worker, cache_dir, "reference", tasks.STRIDES)
    r = worker.call([tasks.PADDED], [(F64, (2,))], ref64())
    assert r.reply["status"] == "ok" and r.outputs[0].tolist() == [11.0, 1.0]


def test_a_sticky_device_error_ends_the_worker_with_status_3(cache_dir):
    w = WorkerClient()
    try:
        assert w.hello()["type"] == "hello"
        load(w, cache_dir, "candidate", tasks.SHAPED, WILD_STORE)
        r = w.call([torch.randn(2, 4)], [(F32, (2, 4))], run(), timeout=120)
        assert r.reply["status"] == "exception", r.reply
        assert "sticky error state" in r.reply["message"], r.reply
        assert w.proc.wait(60) == 3
    finally:
        w.close()
