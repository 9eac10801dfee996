"""A problem over --reduce-over-gb is judged at a reduced shape, replica and battery alike, every
verdict marked with it (kernel.py, reduced.py). On the CPU, with problems of 1 to 2 MiB in + out
and a limit of 1 MiB standing in for the H200's gigabytes."""

import json

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit import rescale  # noqa: E402
from kcv.audit.kernel import KernelConfig, audit_kernel  # noqa: E402

REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

FAITHFUL = REFERENCE.replace("class Model(", "class ModelNew(")
# Right only at the reference shape's batch: at the reduced shape both checks see it.
SHAPE_SPECIFIC = FAITHFUL.replace("        return torch.relu(x) * 2.0", '''        if x.shape[0] != 64:
            return torch.relu(x)
        return torch.relu(x) * 2.0''')
# Wrong only at the reference shape: what a reduced shape cannot see (the corpus's own verdict,
# made at the full size, is the one left to).
FULL_SIZE_BUG = FAITHFUL.replace("        return torch.relu(x) * 2.0", '''        y = torch.relu(x) * 2.0
        if x.shape[0] == 64:
            y[-1] = y[-1] + 1.0
        return y''')

REFERENCE_BYTES = 2 * 64 * 4096 * 4


def audit(kernel_id: str, candidate: str, tmp_path, reduce_over: int = 1 << 20,
          reference: str = REFERENCE, timings: dict | None = None) -> dict:
    row = {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 19,
           "problem_name": "19_ReLU_scaled.py", "language": "pytorch",
           "reference_code": reference, "candidate_code": candidate}
    cfg = KernelConfig(profiles=["strict", "pytorch-eager"], device="cpu", call_timeout_s=120,
                       memory_limit_bytes=32 << 30, cache_dir=str(tmp_path),
                       reduce_over_bytes=reduce_over, reduce_to_bytes=64 << 10)
    return audit_kernel(row, cfg, timings)


def shapes(out: dict) -> list:
    return [json.loads(v["evidence_json"]).get("battery_shape") for v in out["verdicts"]]


def failed(out: dict) -> set:
    return {v["gate"] for v in out["verdicts"] if v["verdict"] == "fail"}


def test_a_faithful_kernel_passes_with_every_verdict_marked_reduced(tmp_path):
    out = audit("reduced_faithful", FAITHFUL, tmp_path)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert failed(out) == set(), out["verdicts"]
    assert len(out["verdicts"]) == 24  # 12 gates x 2 profiles
    want = {"reduced": "batch_size=2", "reference_shape_bytes": REFERENCE_BYTES,
            "reduced_shape_bytes": 2 * 2 * 4096 * 4}
    assert all(s == want for s in shapes(out)), shapes(out)
    assert "judged at a reduced shape batch_size=2" in out["message"]
    cmp01 = next(v for v in out["verdicts"] if v["gate"] == "CMP-01")
    # CMP-01's second shape starts from the reduced one: another batch, not the same.
    assert json.loads(cmp01["evidence_json"])["rescale"] == {"rescale": "run",
                                                             "override": "batch_size=3"}


def test_under_the_limit_the_battery_runs_at_the_reference_shape(tmp_path):
    timings: dict = {}
    out = audit("reduced_not_needed", FAITHFUL, tmp_path, reduce_over=REFERENCE_BYTES,
                timings=timings)
    assert out["status"] == "ok", out["message"]
    assert all(s is None for s in shapes(out))
    assert "reduced" not in out["message"]
    assert "sized_on_meta" not in timings


# 2^22 x 4096 floats in and out, 128 GiB: over the workers' 32 GiB limit, so judged only because
# the reference sizes the reference shape on meta and draws and runs nothing there.
HUGE_REFERENCE = REFERENCE.replace("batch_size = 64", "batch_size = 1 << 22")


def test_a_problem_too_big_to_draw_is_sized_on_meta_and_judged_at_a_reduced_shape(tmp_path):
    timings: dict = {}
    out = audit("reduced_huge", HUGE_REFERENCE.replace("class Model(", "class ModelNew("),
                tmp_path, reference=HUGE_REFERENCE, timings=timings)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted" and failed(out) == set(), out["verdicts"]
    assert timings["sized_on_meta"] == 1 and timings["reduced"] == 1
    got = shapes(out)[0]
    assert got["reference_shape_bytes"] == 2 * (1 << 22) * 4096 * 4
    assert got["reduced"].startswith("batch_size=") and got["reduced_shape_bytes"] <= 1 << 20


# Sizes written as literals: no module constant to shrink. Sized on meta (2 MiB, over the
# limit), then judged at its own shape on a pair that draws and runs for real.
LITERAL_SIZES = REFERENCE.replace("torch.randn(batch_size, dim)", "torch.randn(64, 4096)")


def test_over_the_limit_with_nothing_to_shrink_it_is_judged_on_a_real_pair(tmp_path):
    timings: dict = {}
    out = audit("reduced_literal", LITERAL_SIZES.replace("class Model(", "class ModelNew("),
                tmp_path, reference=LITERAL_SIZES, timings=timings)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted" and failed(out) == set(), out["verdicts"]
    assert len(out["verdicts"]) == 24 and all(s is None for s in shapes(out))
    assert timings["sized_on_meta"] == 1 and "reduced" not in timings
    assert "judged at the reference shape" in out["message"]
    assert "no reduced shape" in out["message"], out["message"]


# The same, its forward too slow on meta (a recurrent layer, say): the first pair loads for
# real. It is still not the pair judged: its load asks for sizing, and a worker of it restarted
# mid-battery could come back only sized, every call refused.
SLOW_ON_META = LITERAL_SIZES.replace("import torch\n", "import time\nimport torch\n").replace(
    "        return torch.relu(x) * 2.0", """        if x.is_meta:
            time.sleep(60)
        return torch.relu(x) * 2.0""")


def test_over_the_limit_no_call_goes_to_a_pair_whose_load_asks_for_sizing(tmp_path, monkeypatch):
    from kcv.audit import kernel as kernel_mod

    made = []

    class Recording(kernel_mod.ProblemSession):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(kernel_mod, "ProblemSession", Recording)
    timings: dict = {}
    out = audit("reduced_slow_on_meta", SLOW_ON_META.replace("class Model(", "class ModelNew("),
                tmp_path, reference=SLOW_ON_META, timings=timings)
    assert out["status"] == "ok", out["message"]
    assert "sized_on_meta" not in timings and "no reduced shape" in out["message"]
    assert made[0].size_on_meta_over == 1 << 20 and "candidate" not in made[0].costs
    called = [p for p in made if "candidate" in p.costs]
    assert called and all(p.size_on_meta_over == 0 for p in called)


def test_a_kernel_right_only_at_the_reference_shape_fails_at_the_reduced_one(tmp_path):
    out = audit("reduced_shape_specific", SHAPE_SPECIFIC, tmp_path)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "rejected"
    assert "CMP-01" in failed(out), out["verdicts"]


def test_a_defect_only_at_the_reference_shape_is_missed_at_the_reduced_one(tmp_path):
    out = audit("reduced_full_size_bug", FULL_SIZE_BUG, tmp_path)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert failed(out) == set(), out["verdicts"]
    # at the reference shape both see it
    full = audit("full_size_bug", FULL_SIZE_BUG, tmp_path, reduce_over=0)
    assert full["replica_verdict"] == "rejected"
    assert "CMP-01" in failed(full)


def test_reduce_shrinks_batch_first_keeping_alignment():
    code = REFERENCE.replace("dim = 4096", "dim = 393216").replace("batch_size = 64",
                                                                    "batch_size = 4096")
    assert rescale.reduce(code, {"batch_size": 4096, "dim": 393216}, 48) == (
        {"batch_size": 64}, "")
    # Past the batch, the next size get_inputs reads, a power of two below the rest of the factor.
    assert rescale.reduce(code, {"batch_size": 4096, "dim": 393216}, 100000) == (
        {"batch_size": 1, "dim": 8192}, "")


def test_reduce_keeps_the_weights_sizes_until_last():
    code = '''
batch_size = 8
in_features = 4096
height = 1024
def get_inputs():
    return [torch.randn(batch_size, in_features, height)]
def get_init_inputs():
    return [in_features]
'''
    override, why = rescale.reduce(code, {"batch_size": 8, "in_features": 4096, "height": 1024},
                                   8 * 64)
    assert why == ""
    assert override == {"batch_size": 1, "height": 16}  # in_features (the weights') untouched


def test_reduce_says_why_not():
    fixed = "def get_inputs():\n    return [torch.randn(4, 4)]\n"
    assert rescale.reduce(fixed, {}, 10)[0] is None
    floor = "n = 16\ndef get_inputs():\n    return [torch.randn(n, n)]\n"
    override, why = rescale.reduce(floor, {"n": 16}, 10)
    assert override is None and "floor" in why


# A tall-skinny product (KernelBench's #9 at a small size): N is its inner dimension, not a
# batch, so it keeps its size (16, the floor) and M, which its M x M output grows with, shrinks.
MATMUL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 512
N = 16


def get_inputs():
    return [torch.randn(M, N), torch.randn(N, M)]


def get_init_inputs():
    return []
'''
MATMUL_BYTES = 2 * 512 * 16 * 4 + 512 * 512 * 4

# Predictions times targets that broadcast only where the batch equals the width, as at the
# reference shape: no reduced shape is one the reference takes, so it is judged at its own.
BROADCAST = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, t):
        return torch.clamp(1 - x * t, min=0)


batch_size = 512
width = 512


def get_inputs():
    return [torch.randn(batch_size, width), torch.randn(batch_size)]


def get_init_inputs():
    return []
'''


def audit_row(kernel_id, reference, tmp_path, over, to):
    row = {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 9,
           "problem_name": "9_Tall_skinny_matmul.py", "language": "pytorch",
           "reference_code": reference,
           "candidate_code": reference.replace("class Model(", "class ModelNew(")}
    cfg = KernelConfig(profiles=["strict"], device="cpu", call_timeout_s=120,
                       memory_limit_bytes=32 << 30, cache_dir=str(tmp_path),
                       reduce_over_bytes=over, reduce_to_bytes=to)
    return audit_kernel(row, cfg)


def test_an_inner_dimension_keeps_its_size_and_the_outer_one_shrinks(tmp_path):
    out = audit_row("reduced_matmul", MATMUL, tmp_path, over=1 << 20, to=MATMUL_BYTES // 16)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert failed(out) == set(), out["verdicts"]
    want = {"reduced": "M=32", "reference_shape_bytes": MATMUL_BYTES,
            "reduced_shape_bytes": (2 * 32 * 16 + 32 * 32) * 4}
    assert all(s == want for s in shapes(out)), shapes(out)


def test_without_a_reduced_shape_the_reference_takes_it_is_judged_at_its_own(tmp_path):
    out = audit_row("reduced_never", BROADCAST, tmp_path, over=1 << 20, to=64 << 10)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert "the reference fails at the reduced shape batch_size=" in out["message"]
    assert "the reference fails at the reduced shape width=" in out["message"]
    assert "judged at the reference shape" in out["message"]
    assert failed(out) == set(), out["verdicts"]
    assert all(s is None for s in shapes(out))


def test_the_cli_reduces_over_1_gib_by_default_and_0_turns_it_off():
    from kcv.audit.__main__ import parser

    args = parser().parse_args(["c.jsonl", "--store", "s.db"])
    assert (args.reduce_over_gb, args.reduce_to_gb) == (1.0, 0.125)
    assert parser().parse_args(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "0"]
                               ).reduce_over_gb == 0


def test_the_children_of_procs_get_the_same_reduction_even_when_it_is_off(tmp_path):
    from kcv.audit.orchestrator import AuditOptions
    from kcv.audit.parallel import ParallelAuditor

    for over in (0, 3 << 30):
        opts = AuditOptions(corpora=[], store=str(tmp_path / f"s{over}.db"),
                            reduce_over_bytes=over, reduce_to_bytes=1 << 26)
        cmd = ParallelAuditor(opts, 2).child_command(["x"], 1, 1.0, True, None)
        assert float(cmd[cmd.index("--reduce-over-gb") + 1]) * 2**30 == over
        assert float(cmd[cmd.index("--reduce-to-gb") + 1]) == 1 / 16


# reduced.search on its own, with a stand-in for starting a pair: the bytes each shape measures
# are given, so every branch is reached without workers.
SEARCH_CODE = """
batch_size = 64
K = 1024
M = 512
def get_inputs():
    return [torch.randn(batch_size, K), torch.randn(M)]
"""
SEARCH_CONSTS = {"batch_size": 64, "K": 1024, "M": 512}


class Pair:
    def __init__(self, override):
        self.override, self.closed = dict(override), 0

    def close(self):
        self.closed += 1


def run_search(measure, io=100 << 20, over=10 << 20, to=1 << 20, code=SEARCH_CODE,
               consts=SEARCH_CONSTS):
    from kcv.audit import reduced

    made, notes = [], []

    def try_shape(override, desc):
        small = measure(override)
        if small is None:
            raise reduced.ShapeRejected("no")
        made.append(Pair(override))
        return made[-1], small

    try:
        result = reduced.search(code, consts, io, over, to, try_shape, notes)
    except reduced.NoReducedShape as e:
        result = e
    return result, made, notes


def test_search_reduces_again_from_a_shape_still_over_the_limit():
    # The first shape shrinks the bytes (5x) but stays over 10 MiB; the second gets under.
    sizes = iter([20 << 20, 1 << 20])
    (pair, override, small), made, notes = run_search(lambda o: next(sizes))
    assert small == 1 << 20 and pair is made[-1] and pair.closed == 0
    assert set(made[0].override) <= set(override)  # from the first shape, not the reference
    assert made[0].closed == 1
    assert any("still has 0.02 GiB" in n for n in notes), notes


def test_search_drops_a_step_that_does_not_shrink_the_bytes():
    # batch_size does not reach the largest tensor here: 100 -> 90 MiB; dropped and avoided.
    def measure(o):
        return (90 << 20) if "M" not in o else (1 << 20)
    (pair, override, small), made, notes = run_search(measure)
    assert "batch_size" not in override and "M" in override, override
    assert made[0].closed == 1 and pair.closed == 0
    assert any("batch_size=" in n and "dropped" in n for n in notes), notes


def test_search_keeps_the_best_shape_over_the_limit_when_later_ones_fail():
    first = {}

    def measure(o):
        if not first:
            first.update(o)
            return 20 << 20  # shrank 5x, still over
        return (20 << 20) if o == first else None  # every later shape rejected
    (pair, override, small), made, notes = run_search(measure)
    assert override == first and small == 20 << 20
    assert pair is made[-1] and pair.closed == 0 and made[0].closed == 1  # started again
    assert any("smallest found, over" in n for n in notes), notes


def test_search_never_calls_a_shape_no_smaller_than_the_reference_reduced():
    result, made, notes = run_search(lambda o: 100 << 20)
    assert isinstance(result, Exception) and "no reduced shape" in str(result)
    assert all(p.closed == 1 for p in made)


def test_search_says_which_shapes_it_tried_when_the_reference_takes_none():
    result, made, notes = run_search(lambda o: None)
    assert made == []
    # batch_size and K in one step (64 -> 1 leaves a factor for K), then M alone; then no size
    # is left that has not failed.
    assert str(result) == ("no reduced shape (tried batch_size=1,K=512 (the reference fails); "
                           "M=16 (the reference fails): no size left that the reference takes "
                           "smaller)")
    assert sum("the reference fails at the reduced shape" in n for n in notes) == 2


def test_cmp01s_second_shape_starts_from_the_reduced_constants():
    from kcv.audit.battery import Battery

    asked = []

    class Unstarted:
        def start_both(self):
            pass

        def close(self):
            pass

    def make_session(constants=None, label=""):
        asked.append(dict(constants or {}))
        return Unstarted()

    row = {"id": "x", "reference_code": REFERENCE, "problem_name": "19_ReLU.py", "level": 1}
    for base, second in (({"batch_size": 3}, 5), (None, 3)):
        asked.clear()
        b = Battery(Unstarted(), row, ["strict"], make_session=make_session, base_constants=base)
        b.prestart_rescale()
        b.close()
        assert asked == [{"batch_size": second}], (base, asked)


def test_reduce_has_nothing_to_do_within_the_target():
    assert rescale.reduce(REFERENCE, {"batch_size": 64, "dim": 4096}, 1.0)[0] is None
    assert rescale.reduce(REFERENCE, {"batch_size": 64, "dim": 4096}, float("nan"))[0] is None


def test_the_cli_refuses_a_limit_not_above_the_target(capsys):
    from kcv.audit.__main__ import main

    with pytest.raises(SystemExit):
        main(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "0.1"])
    assert "must exceed --reduce-to-gb" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "-1"])


def test_a_candidate_that_loads_only_at_the_reference_shape_keeps_its_load_status(tmp_path):
    # Its module refuses any other batch: it loaded at the reference shape, not at the reduced.
    only_64 = FAITHFUL + "\nassert batch_size == 64, 'built for batch 64 only'\n"
    out = audit("reduced_load_fails", only_64, tmp_path)
    assert out["status"] == "import_error", out["message"]
    assert "at the reduced shape batch_size=2 (it loaded at the reference shape)" in out["message"]
    assert "built for batch 64 only" in out["message"]


def test_search_keeps_a_shape_within_the_limit_however_little_it_shrank():
    # 1120 bytes of which 520 do not scale with the batch: 568 is under the limit of 1000.
    (pair, override, small), made, notes = run_search(lambda o: 568, io=1120, over=1000, to=100)
    assert small == 568 and pair is made[0] and pair.closed == 0


def test_search_returns_the_held_best_without_starting_it_again():
    code = "batch_size = 4\ndef get_inputs():\n    return [torch.randn(batch_size, 8)]\n"
    (pair, override, small), made, notes = run_search(lambda o: 20 << 20, code=code,
                                                       consts={"batch_size": 4})
    assert override == {"batch_size": 1} and small == 20 << 20
    assert made == [pair] and pair.closed == 0  # one start: nothing further to try
    assert any("smallest found" in n for n in notes), notes
