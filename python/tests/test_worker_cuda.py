"""GPU tests of the Python worker (skipped without CUDA): the candidate on device "cuda" gets
device copies of kcv's input views with their strides and padding kept, in-place writes on the
device come back to kcv's input bytes, side-stream work is finished before the output copy, the
float64 reference runs on the device, and a load_inline CUDA candidate of our own compiles (into
cache_dir) and runs. Run on a GPU machine:
  PYTHONPATH=python python3 -m pytest python/tests/test_worker_cuda.py
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kb_problems as kb  # noqa: E402
from worker_client import Arg  # noqa: E402

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
    r = worker.call([x, y], [(F32, (4, 8))], {"mode": 0})
    assert r.reply["status"] == "ok", r.reply
    assert torch.equal(r.outputs[0], x.value() + 3.0 * y.value() * 0.5)
    assert r.inputs_unchanged == [True, True]


def test_in_place_writes_on_the_device_reach_the_input_bytes(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, hostile("mutate_inputs"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], {"mode": 0})
    assert r.reply["status"] == "ok" and r.inputs_unchanged == [False, True]


def test_side_stream_work_is_finished_before_the_copy(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, hostile("side_stream"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], {"mode": 0})
    assert r.reply["status"] == "ok"
    torch.testing.assert_close(r.outputs[0], x + 1.5 * y)


def test_the_float64_reference_runs_on_the_device(worker, cache_dir):
    load(worker, cache_dir, "reference", kb.LINEAR)
    x = torch.randn(5, 6)
    r = worker.call([x], [(F64, (5, 7))], {"mode": 0})
    ref = kb.module(kb.LINEAR)
    torch.manual_seed(3)
    model = ref.Model(*ref.get_init_inputs()).double()
    with torch.no_grad():
        torch.testing.assert_close(r.outputs[0], model(x.double()), rtol=1e-12, atol=1e-14)


def test_a_load_inline_cuda_candidate_compiles_and_runs(worker, cache_dir):
    load(worker, cache_dir, "candidate", kb.ADD, CUDA_ADD, timeout=400.0)
    assert os.path.isdir(os.path.join(cache_dir, "torch_extensions"))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    r = worker.call([x, y], [(F32, (4, 8))], {"mode": 0})
    assert r.reply["status"] == "ok", r.reply
    torch.testing.assert_close(r.outputs[0], x + 1.5 * y)
