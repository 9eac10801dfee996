"""problem.facts of a reference load (docs/06_worker_protocol.md §7.2, kcv.worker.facts): the
reductions a forward runs (kind, terms per output element, and the size constant that sets
them, found by meta traces at bumped constants), minmax, stochastic, repeatable, the ops, the
constants get_inputs / get_init_inputs read, and KernelBench's trial seeds. Over the protocol
on small KernelBench-style problems written here, and op by op through the Recorder in this
process (kcv.worker.reductions' lengths against hand-computed ones)."""

import pytest

torch = pytest.importorskip("torch")

F = torch.nn.functional


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kcv-cache"))


def facts_of(worker, cache_dir, code, **extra):
    reply = worker.load(kind="kernelbench", role="reference", reference_code=code, seed=7,
                        cache_dir=cache_dir, device="cpu", **extra)
    assert reply["type"] == "loaded", (reply, worker.stderr()[-3000:])
    return reply["problem"]["facts"]


def source(init_args: str, init_body: str, forward: str, constants: str, inputs: str,
           init: str = "[]") -> str:
    return f'''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self{init_args}):
        super().__init__()
        {init_body}

    def forward(self, *xs):
        {forward}

{constants}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return {init}
'''


ROW_SUM = source("", "pass", "return torch.sum(xs[0], dim=1)", "BATCH = 4\nDIM = 16\nUNUSED = 3",
                 "[torch.randn(BATCH, DIM)]")
MATMUL = source("", "pass", "return xs[0] @ xs[1]", "M = 3\nK = 10\nN = 5",
                "[torch.randn(M, K), torch.randn(K, N)]")
LINEAR = source(", d_in, d_out", "self.fc = nn.Linear(d_in, d_out)", "return self.fc(xs[0])",
                "BATCH = 2\nIN_FEATURES = 12\nOUT_FEATURES = 5",
                "[torch.randn(BATCH, IN_FEATURES)]", "[IN_FEATURES, OUT_FEATURES]")
# IN_CH + 1 = 5 does not divide into 2 groups: the bump falls back to IN_CH * 2
GROUPED_CONV = source(", c_in, c_out, k, groups",
                      "self.conv = nn.Conv2d(c_in, c_out, k, groups=groups)",
                      "return self.conv(xs[0])",
                      "BATCH = 2\nIN_CH = 4\nOUT_CH = 6\nKERNEL = 3\nGROUPS = 2\nSIZE = 8",
                      "[torch.randn(BATCH, IN_CH, SIZE, SIZE)]", "[IN_CH, OUT_CH, KERNEL, GROUPS]")
DROPOUT = source(", p", "self.drop = nn.Dropout(p)", "return self.drop(xs[0])", "P = 0.5",
                 "[torch.randn(8, 8)]", "[P]")
MAXIMUM = source("", "pass", "return torch.maximum(xs[0], xs[1])", "",
                 "[torch.randn(4), torch.randn(4)]")
COUNTER = source("", "self.calls = 0", "self.calls += 1\n        return xs[0] + self.calls", "",
                 "[torch.randn(4)]")
# a row sum whose order follows its input's address (data_ptr() % 64), as ORD-02_alignment_peel
ADDRESS_ORDER = source("", "pass", "x = xs[0]\n        if x.data_ptr() % 64 == 0:\n"
                       "            return x.sum(dim=1)\n        return x.flip(1).cumsum(1)[:, -1]",
                       "ROWS = 8\nCOLS = 1000", "[torch.randn(ROWS, COLS)]")
NO_META = source("", "pass", "return xs[0].softmax(dim=-1) * (xs[0].sum() * 0 + 1).item()",
                 "DIM = 6", "[torch.randn(3, DIM)]")


def test_a_row_sum_is_a_sum_over_its_dim_set_by_that_constant(worker, cache_dir):
    facts = facts_of(worker, cache_dir, ROW_SUM)
    assert facts["reductions"] == [{"op": "aten.sum.dim_IntList", "kind": "sum", "length": 16,
                                    "constant": "DIM"}]
    assert facts["constants"] == [
        {"name": "BATCH", "value": 4, "get_inputs": True, "init": False},
        {"name": "DIM", "value": 16, "get_inputs": True, "init": False},
        {"name": "UNUSED", "value": 3, "get_inputs": False, "init": False}]
    assert facts["ops"] == ["aten.sum.dim_IntList"]
    assert (facts["minmax"], facts["stochastic"], facts["repeatable"]) == (False, False, True)


def test_the_constants_of_a_rescaled_load_are_its_own(worker, cache_dir):
    facts = facts_of(worker, cache_dir, ROW_SUM, constants={"DIM": 5})
    assert facts["reductions"][0]["length"] == 5 and facts["reductions"][0]["constant"] == "DIM"
    assert facts["constants"][1]["value"] == 5


def test_a_matmul_is_a_dot_over_k(worker, cache_dir):
    facts = facts_of(worker, cache_dir, MATMUL)
    assert facts["reductions"] == [{"op": "aten.mm.default", "kind": "dot", "length": 10,
                                    "constant": "K"}]


def test_a_linear_layer_is_a_dot_over_its_input_features(worker, cache_dir):
    facts = facts_of(worker, cache_dir, LINEAR)
    assert facts["reductions"] == [{"op": "aten.addmm.default", "kind": "dot", "length": 12,
                                    "constant": "IN_FEATURES"}]
    names = {c["name"]: (c["get_inputs"], c["init"]) for c in facts["constants"]}
    assert names == {"BATCH": (True, False), "IN_FEATURES": (True, True),
                     "OUT_FEATURES": (False, True)}


def test_a_grouped_convolution_sums_in_channels_per_group_times_the_kernel(worker, cache_dir):
    facts = facts_of(worker, cache_dir, GROUPED_CONV)
    assert facts["reductions"] == [{"op": "aten.convolution.default", "kind": "dot",
                                    "length": 2 * 3 * 3, "constant": "IN_CH"}]


def test_dropout_in_training_is_stochastic_and_without_it_is_not(worker, cache_dir):
    assert facts_of(worker, cache_dir, DROPOUT)["stochastic"] is True
    assert facts_of(worker, cache_dir, DROPOUT.replace("P = 0.5", "P = 0.0"))["stochastic"] \
        is False
    in_eval = DROPOUT.replace("self.drop = nn.Dropout(p)", "self.drop = nn.Dropout(p).eval()")
    assert facts_of(worker, cache_dir, in_eval)["stochastic"] is False
    drawn = MAXIMUM.replace("torch.maximum(xs[0], xs[1])", "xs[0] + torch.randn(4)")
    assert facts_of(worker, cache_dir, drawn)["stochastic"] is True
    # seeded before every forward: dropout's draws are the same each time
    assert facts_of(worker, cache_dir, DROPOUT)["repeatable"] is True


def test_maximum_and_relu_are_minmax_and_a_sum_is_not(worker, cache_dir):
    assert facts_of(worker, cache_dir, MAXIMUM)["minmax"] is True
    relu = MAXIMUM.replace("torch.maximum(xs[0], xs[1])", "torch.relu(xs[0])")
    assert facts_of(worker, cache_dir, relu)["minmax"] is True
    assert facts_of(worker, cache_dir, ROW_SUM)["minmax"] is False


def test_a_forward_that_follows_its_inputs_address_is_not_repeatable(worker, cache_dir):
    """Repeatability is taken at shifted input addresses too (facts.REPEAT_OFFSETS), the
    alignments ORD-02 gives the candidate: a reference whose bits follow the address is no
    ground for declaring determinism."""
    assert facts_of(worker, cache_dir, ADDRESS_ORDER)["repeatable"] is False
    assert facts_of(worker, cache_dir, ROW_SUM)["repeatable"] is True


def test_a_forward_that_changes_between_runs_is_not_repeatable(worker, cache_dir):
    assert facts_of(worker, cache_dir, COUNTER)["repeatable"] is False
    assert facts_of(worker, cache_dir, MAXIMUM)["repeatable"] is True


def test_where_meta_cannot_run_the_problem_constants_are_empty(worker, cache_dir):
    facts = facts_of(worker, cache_dir, NO_META)
    assert {"op": "aten._softmax.default", "kind": "sum", "length": 6, "constant": ""} in \
        facts["reductions"]
    assert {"op": "aten.sum.default", "kind": "sum", "length": 18, "constant": ""} in \
        facts["reductions"]


def test_the_trial_seeds_are_kernelbenchs_and_leave_the_global_rng_alone(worker, cache_dir):
    from kcv.worker.facts import trial_seeds

    torch.manual_seed(42)
    want = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5)]
    assert facts_of(worker, cache_dir, ROW_SUM)["trial_seeds"] == want
    torch.manual_seed(3)
    state = torch.get_rng_state()
    assert trial_seeds() == want
    assert torch.equal(torch.get_rng_state(), state)


def test_read_names_sees_the_names_a_function_loads():
    from kcv.worker.facts import read_names

    code = "A = 1\nB = 2\ndef get_inputs():\n    n = A * 2\n    return [n]\n" \
           "def get_inputs():\n    return [B]\n"
    assert read_names(code, "get_inputs") == {"B"}  # the last definition is the one that runs
    assert read_names(code, "get_init_inputs") == set()


def test_the_meta_budget_bounds_the_attribution():
    import kb_problems as kb

    from kcv.worker.facts import attribute

    def retrace(overrides):
        code = ROW_SUM
        for name, value in overrides.items():
            code = code.replace(f"{name} = ", f"{name} = {value}  # ")
        return kb.module(code)

    consts = [{"name": "BATCH", "value": 4, "get_inputs": True, "init": False},
              {"name": "DIM", "value": 16, "get_inputs": True, "init": False}]
    found, traced = attribute(consts, retrace, 7)
    assert found[("aten.sum.dim_IntList", 16)] == "DIM" and found[("sum", 16)] == "DIM"
    assert traced == {("aten.sum.dim_IntList", 16)}
    assert attribute(consts, retrace, 7, budget_s=0.0) == ({}, set())  # no time: nothing


# --- lengths op by op ------------------------------------------------------------------------

def recorded(fn, *args):
    from kcv.worker.facts import Recorder

    r = Recorder()
    with r, torch.no_grad():
        fn(*args)
    return [(op.split(".")[1], kind, length) for op, kind, length in r.events]


def test_reduction_lengths_op_by_op():
    x = torch.randn(2, 3, 4, 5)
    assert recorded(lambda t: t.sum(dim=(1, 3)), x) == [("sum", "sum", 15)]
    assert recorded(lambda t: t.mean(), x) == [("mean", "sum", 120)]
    assert recorded(lambda t: t.var(dim=-1), x) == [("var", "sum", 5)]
    assert recorded(lambda t: t.norm(dim=2), x) == [("linalg_vector_norm", "sum", 4)]
    assert recorded(lambda t: torch.logsumexp(t, 1), x) == [("logsumexp", "sum", 3)]
    assert recorded(lambda t: t.log_softmax(dim=2), x) == [("_log_softmax", "sum", 4)]
    assert recorded(lambda t: t.argmax(), x) == [("argmax", "compare", 120)]
    assert recorded(lambda t: t.amax(dim=(0, 1)), x) == [("amax", "compare", 6)]
    assert recorded(lambda t: t.max(dim=3), x) == [("max", "compare", 5)]
    assert recorded(lambda t: torch.max(t, t), x) == []  # elementwise
    assert recorded(lambda t: t.cumprod(1), x) == [("cumprod", "scan", 3)]
    assert recorded(lambda t: F.max_pool2d(t, 2), x) == [("max_pool2d_with_indices", "compare", 4)]
    assert recorded(lambda t: F.adaptive_max_pool2d(t, (2, 2)), x) == \
        [("adaptive_max_pool2d", "compare", 2 * 3)]
    assert recorded(lambda t: F.layer_norm(t, (4, 5)), x) == [("native_layer_norm", "norm", 20)]
    assert recorded(lambda t: F.group_norm(t, 3), x) == [("native_group_norm", "norm", 20)]
    assert recorded(lambda t: F.batch_norm(t, None, None, training=True), x) == \
        [("native_batch_norm", "norm", 2 * 4 * 5)]
    mean, var = torch.zeros(3), torch.ones(3)
    assert all(kind != "norm" for _, kind, _ in
               recorded(lambda t: F.batch_norm(t, mean, var, training=False), x))


def test_dot_lengths_op_by_op():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 6)
    assert recorded(torch.bmm, a, b) == [("bmm", "dot", 4)]
    assert recorded(lambda p, q: torch.baddbmm(torch.zeros(2, 3, 6), p, q), a, b) == \
        [("baddbmm", "dot", 4)]
    assert recorded(lambda p, q: torch.addbmm(torch.zeros(3, 6), p, q), a, b) == \
        [("addbmm", "dot", 8)]
    assert recorded(lambda m: torch.mv(m, torch.randn(4)), a[0]) == [("mv", "dot", 4)]
    w = torch.randn(3, 2, 5)  # a transposed 1-d convolution: in 3, out 2, kernel 5
    assert recorded(lambda t: F.conv_transpose1d(t, w), torch.randn(1, 3, 7)) == \
        [("convolution", "dot", 15)]
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 9, 8)
    events = recorded(lambda p, r: F.scaled_dot_product_attention(p, r, r), q, k)
    assert [e[1:] for e in events] == [("dot", 8), ("dot", 9)]  # head dim, key length
