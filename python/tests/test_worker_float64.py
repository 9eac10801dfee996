"""The reference role's float64 run (the reference64 task) on models that make float32 tensors
themselves: a GRU whose initial state is a plain attribute drawn in __init__, and an LSTM that
draws its state inside forward. Both failed with "Input and hidden tensors are not the same
dtype" before the worker widened such tensors. The expected values are computed here: the
float32 model widened by hand, its random state drawn in float32 (as the candidate's run draws
it) and then widened. reference32 must stay the plain float32 run, and the default dtype must be
float32 again after a reference64 call. The problems are our own, written for these tests."""

import copy

import pytest

torch = pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from worker_client import draw, ref32, ref64  # noqa: E402

F32, F64 = torch.float32, torch.float64
SEED = 7

GRU_ATTRIBUTE_STATE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Last step of a 2-layer GRU whose initial state is drawn once, as a plain attribute."""

    def __init__(self, d_in, hidden, layers, batch):
        super().__init__()
        self.gru = nn.GRU(d_in, hidden, layers, batch_first=True)
        self.h0 = torch.randn(layers, batch, hidden)
        self.scales = [torch.ones(hidden) * 0.5]

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        out, _ = self.gru(x, self.h0)
        return out[:, -1, :] * self.scales[0]


BATCH = 4
SEQ = 5
D_IN = 3
HIDDEN = 6
LAYERS = 2


def get_inputs():
    return [torch.randn(BATCH, SEQ, D_IN)]


def get_init_inputs():
    return [D_IN, HIDDEN, LAYERS, BATCH]
'''

LSTM_FORWARD_STATE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Last step of a 2-layer LSTM whose initial states are drawn in every forward."""

    def __init__(self, d_in, hidden, layers):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.lstm = nn.LSTM(d_in, hidden, layers, batch_first=True)

    def forward(self, x):
        h0 = torch.randn(self.layers, x.size(0), self.hidden, device=x.device)
        c0 = torch.randn(self.layers, x.size(0), self.hidden, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return out[:, -1, :] + torch.zeros(self.hidden)


BATCH = 4
SEQ = 5
D_IN = 3
HIDDEN = 6
LAYERS = 2


def get_inputs():
    return [torch.randn(BATCH, SEQ, D_IN)]


def get_init_inputs():
    return [D_IN, HIDDEN, LAYERS]
'''


def load_reference(worker, cache_dir, code):
    reply = worker.load(kind="kernelbench", role="reference", reference_code=code, seed=SEED,
                        cache_dir=cache_dir, device="cpu")
    assert reply["type"] == "loaded", reply
    assert reply["problem"]["outputs"] == [{"dtype": "f32", "shape": [4, 6]}]
    return reply


def model32(code):
    ref = kb.module(code)
    torch.manual_seed(SEED)
    init = ref.get_init_inputs()
    torch.manual_seed(SEED)
    return ref.Model(*init)


def test_a_plain_attribute_state_is_widened_for_the_float64_run(worker, tmp_path):
    load_reference(worker, str(tmp_path), GRU_ATTRIBUTE_STATE)
    x = torch.randn(4, 5, 3)
    r = worker.call([x], [(F64, (4, 6))], ref64(SEED))
    assert r.reply["status"] == "ok", r.reply

    m32 = model32(GRU_ATTRIBUTE_STATE)
    m64 = copy.deepcopy(m32).double()
    m64.h0, m64.scales = m32.h0.double(), [m32.scales[0].double()]  # the float32 draws, widened
    with torch.no_grad():
        want = m64(x.double())
    torch.testing.assert_close(r.outputs[0], want, rtol=1e-12, atol=1e-12)

    r2 = worker.call([x], [(F64, (4, 6))], ref32(SEED))  # the float32 run stays float32
    assert r2.reply["status"] == "ok", r2.reply
    with torch.no_grad():
        assert torch.equal(r2.outputs[0], m32(x).double())


def test_states_drawn_in_forward_are_the_float32_draws_widened(worker, tmp_path):
    load_reference(worker, str(tmp_path), LSTM_FORWARD_STATE)
    x = torch.randn(4, 5, 3)
    r = worker.call([x], [(F64, (4, 6))], ref64(SEED))
    assert r.reply["status"] == "ok", r.reply

    m32 = model32(LSTM_FORWARD_STATE)
    m64 = copy.deepcopy(m32).double()
    torch.manual_seed(SEED)  # the worker seeds the forward with the task's seed
    h0, c0 = torch.randn(2, 4, 6).double(), torch.randn(2, 4, 6).double()
    with torch.no_grad():
        want = m64.lstm(x.double(), (h0, c0))[0][:, -1, :]
    torch.testing.assert_close(r.outputs[0], want, rtol=1e-12, atol=1e-12)

    r2 = worker.call([x], [(F64, (4, 6))], ref32(SEED))
    torch.manual_seed(SEED)
    with torch.no_grad():
        assert torch.equal(r2.outputs[0], m32(x).double())
    # the float64 run is the float32 one made exact, not another draw: they agree to float32
    torch.testing.assert_close(r.outputs[0], r2.outputs[0], rtol=1e-4, atol=1e-5)


def test_the_default_dtype_is_float32_again_after_a_float64_run(worker, tmp_path):
    load_reference(worker, str(tmp_path), LSTM_FORWARD_STATE)
    assert worker.call([torch.randn(4, 5, 3)], [(F64, (4, 6))], ref64(SEED)).reply["status"] \
        == "ok"
    made = worker.call([], [(F32, (4, 5, 3))], draw(3))
    assert made.reply["status"] == "ok", made.reply  # get_inputs() made float32 tensors again
    torch.manual_seed(3)
    assert torch.equal(made.outputs[0], torch.randn(4, 5, 3))


def test_promote_attributes_widens_plain_tensors_but_not_parameters_or_integers():
    from kcv.worker.float64 import promote_attributes

    m = torch.nn.Sequential(torch.nn.Linear(2, 2))
    m[0].state = torch.ones(3)
    m[0].pair = (torch.ones(1), torch.arange(3))
    m[0].index = torch.arange(4)
    assert promote_attributes(m) == 2
    assert m[0].state.dtype == F64 and m[0].pair[0].dtype == F64
    assert m[0].pair[1].dtype == torch.int64 and m[0].index.dtype == torch.int64
    assert m[0].weight.dtype == F32 and isinstance(m[0].weight, torch.nn.Parameter)
