"""A problem over --reduce-over-gb is judged at a reduced shape, replica and gates alike, every
verdict marked with it (kernel.py, reduced.py, rescale.py). On the CPU, with problems of 1 to 2
MiB in + out and a limit of 1 MiB standing in for the H200's gigabytes. End to end through
verify_module (real workers) where the verdicts matter: a faithful kernel, one right only at the
reference shape, one wrong only there, a problem too big to draw (sized on meta), one with
nothing to shrink, a candidate that loads only at the reference shape. With verify_module a
stand-in (sizing real) where only the shape handed to it matters: an inner dimension kept, a
reference that takes no reduced shape. reduced.search on its own with a stand-in for the
sizing, so every branch is reached without workers."""

import json
import time

import pytest

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

from kcv.audit import reduced  # noqa: E402
from kcv.audit.kernel import KernelConfig, audit_kernel  # noqa: E402
from kcv.audit.sizing import ShapeRefused, Sized, size_problem  # noqa: E402

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


WARM: list = []  # the module's warm parents (conftest.warm_servers) while its tests run


@pytest.fixture(scope="module", autouse=True)
def _warm_parents(warm_servers):
    """Every kernel audited here forks its reference workers from the module's warm parents, as
    the audit's do (its sandboxed candidates keep a warm parent of their own)."""
    WARM.append(warm_servers)
    yield
    WARM.clear()


def audit(kernel_id: str, candidate: str, tmp_path, reduce_over: int = 1 << 20,
          reference: str = REFERENCE, timings: dict | None = None, to: int = 64 << 10,
          profiles=("strict", "pytorch-eager")) -> dict:
    row = {"id": kernel_id, "corpus": "test", "level": 1, "problem_id": 19,
           "problem_name": "19_ReLU_scaled.py", "language": "pytorch",
           "reference_code": reference, "candidate_code": candidate}
    cfg = KernelConfig(profiles=list(profiles), device="cpu", call_timeout_s=120,
                       memory_limit_bytes=32 << 30, cache_dir=str(tmp_path), forkservers=WARM[0],
                       reduce_over_bytes=reduce_over, reduce_to_bytes=to)
    return audit_kernel(row, cfg, timings)


def shapes(out: dict) -> list:
    return [json.loads(v["evidence_json"]).get("battery_shape") for v in out["verdicts"]]


def failed(out: dict) -> dict:
    return {v["gate"]: v["finding"] for v in out["verdicts"] if v["verdict"] == "fail"}


class Handed:
    """verify_module's stand-in: records the judge shape it is given and returns one verdict
    per profile, as the pipeline would (without evidence of a shape of its own)."""

    def __init__(self):
        self.base = []

    def __call__(self, row, **kw):
        self.base.append(dict(kw["base_constants"]))
        verdicts = [{"gate": "CMP-01", "profile": p, "verdict": "pass", "reason": "",
                     "worst_ratio": 0.0, "bits_lost": None, "evidence_json": "{}",
                     "probe_token": "", "finding": "none", "scope": "reference"}
                    for p in kw["profiles"]]
        return {"kernel_id": row["id"], "status": "ok", "message": "",
                "replica_verdict": "accepted", "verdicts": verdicts, "op_class": "elementwise",
                "determinism_declared": True, "facts": "{}", "timings": {"load": 0.0},
                "out_of_memory": False}


@pytest.fixture
def handed(monkeypatch):
    h = Handed()
    monkeypatch.setattr(core, "verify_module", h)
    return h


def test_a_faithful_kernel_passes_with_every_verdict_marked_reduced(tmp_path):
    timings: dict = {}
    out = audit("reduced_faithful", FAITHFUL, tmp_path, timings=timings)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert failed(out) == {}, out["verdicts"]
    assert len(out["verdicts"]) == 24  # 12 gates x 2 profiles
    want = {"reduced": "batch_size=2", "reference_shape_bytes": REFERENCE_BYTES,
            "reduced_shape_bytes": 2 * 2 * 4096 * 4}
    assert all(s == want for s in shapes(out)), shapes(out)
    assert out["message"].startswith("judged at a reduced shape batch_size=2 (0.1 MiB in + out;")
    assert timings["reduced"] == 1
    # the reference worker traced the problem at the judge shape
    consts = {c["name"]: c["value"] for c in json.loads(out["facts"])["constants"]}
    assert consts == {"batch_size": 2, "dim": 4096}


def test_under_the_limit_the_kernel_is_judged_at_the_reference_shape(tmp_path, handed):
    timings: dict = {}
    out = audit("reduced_not_needed", FAITHFUL, tmp_path, reduce_over=REFERENCE_BYTES,
                timings=timings)
    assert out["status"] == "ok", out["message"]
    assert handed.base == [{}]  # the reference's own constants
    assert all(s is None for s in shapes(out)) and out["verdicts"]
    assert "reduced" not in out["message"] and "reduced" not in timings
    # 0: never reduce, however large
    handed.base.clear()
    out = audit("reduced_off", FAITHFUL, tmp_path, reduce_over=0)
    assert handed.base == [{}] and all(s is None for s in shapes(out))


# 2^22 x 4096 floats in and out, 128 GiB: over the workers' 32 GiB limit, so judged only because
# the reference sizes the reference shape on meta and draws and runs nothing there.
HUGE_REFERENCE = REFERENCE.replace("batch_size = 64", "batch_size = 1 << 22")


def test_a_problem_too_big_to_draw_is_sized_on_meta_and_judged_at_a_reduced_shape(tmp_path):
    timings: dict = {}
    out = audit("reduced_huge", HUGE_REFERENCE.replace("class Model(", "class ModelNew("),
                tmp_path, reference=HUGE_REFERENCE, timings=timings)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted" and failed(out) == {}, out["verdicts"]
    assert timings["reduced"] == 1
    got = shapes(out)[0]
    # 128 GiB: only the meta device sizes it under the workers' 32 GiB limit
    assert got["reference_shape_bytes"] == 2 * (1 << 22) * 4096 * 4
    assert got["reduced"].startswith("batch_size=") and got["reduced_shape_bytes"] <= 1 << 20
    assert all(s == got for s in shapes(out))


def test_the_sizing_of_a_huge_problem_draws_nothing(tmp_path):
    t0 = time.monotonic()
    sized = size_problem({"id": "huge", "reference_code": HUGE_REFERENCE}, device="cpu",
                         cache_dir=str(tmp_path), constants=None, over_bytes=1 << 20, gpu=None,
                         threads=None, memory_limit_bytes=32 << 30, timeout_s=300)
    assert sized.sized_on_meta and sized.io_bytes == 2 * (1 << 22) * 4096 * 4
    assert sized.constants == {"batch_size": 1 << 22, "dim": 4096}
    assert sized.in_get_inputs == ["batch_size", "dim"] and sized.in_init == []
    assert time.monotonic() - t0 < 120


# Sizes written as literals: no module constant to shrink. Sized on meta (2 MiB, over the
# limit), then judged at its own shape on a pair that draws and runs for real.
LITERAL_SIZES = REFERENCE.replace("torch.randn(batch_size, dim)", "torch.randn(64, 4096)")


def test_over_the_limit_with_nothing_to_shrink_it_is_judged_at_its_own_shape(tmp_path):
    out = audit("reduced_literal", LITERAL_SIZES.replace("class Model(", "class ModelNew("),
                tmp_path, reference=LITERAL_SIZES)
    # not "the judge shape was only sized on the meta device": verify_module loads it for real
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted" and failed(out) == {}, out["verdicts"]
    assert len(out["verdicts"]) == 24 and all(s is None for s in shapes(out))
    assert "judged at the reference shape (0.00195 GiB in + out): no reduced shape: get_inputs " \
           "reads no module-level int constant" in out["message"], out["message"]


# The same, its forward too slow on meta (a recurrent layer stepping through a long sequence,
# say: 60 s of computing, over meta's budget of CPU time): the first pair loads for real. It is
# still not the pair judged: its load asks for sizing, and a worker of it restarted mid-battery
# could come back only sized, every call refused.
SLOW_ON_META = LITERAL_SIZES.replace("import torch\n", "import time\nimport torch\n").replace(
    "        return torch.relu(x) * 2.0", """        if x.is_meta:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                x = x * 1.0
        return torch.relu(x) * 2.0""")


def test_a_reference_too_slow_on_meta_is_sized_for_real(tmp_path):
    t0 = time.monotonic()
    sized = size_problem({"id": "slow", "reference_code": SLOW_ON_META}, device="cpu",
                         cache_dir=str(tmp_path), constants=None, over_bytes=1 << 20, gpu=None,
                         threads=None, memory_limit_bytes=32 << 30, timeout_s=300)
    assert not sized.sized_on_meta
    assert (sized.input_bytes, sized.output_bytes) == (64 * 4096 * 4, 64 * 4096 * 4)
    assert time.monotonic() - t0 < 50  # not the forward's 60 s on meta


def test_a_kernel_right_only_at_the_reference_shape_fails_at_the_reduced_one(tmp_path):
    out = audit("reduced_shape_specific", SHAPE_SPECIFIC, tmp_path)
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "rejected"
    assert failed(out).get("CMP-01") == "value_over_bound", out["verdicts"]
    assert all(s["reduced"] == "batch_size=2" for s in shapes(out))


def test_a_defect_only_at_the_reference_shape_is_missed_at_the_reduced_one(tmp_path):
    out = audit("reduced_full_size_bug", FULL_SIZE_BUG, tmp_path, profiles=["strict"])
    assert out["status"] == "ok", out["message"]
    assert out["replica_verdict"] == "accepted"
    assert failed(out) == {}, out["verdicts"]
    # at the reference shape both see it
    full = audit("full_size_bug", FULL_SIZE_BUG, tmp_path, reduce_over=0, profiles=["strict"])
    assert full["replica_verdict"] == "rejected"
    assert failed(full).get("CMP-01") == "value_over_bound", full["verdicts"]


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
                       memory_limit_bytes=32 << 30, cache_dir=str(tmp_path), forkservers=WARM[0],
                       reduce_over_bytes=over, reduce_to_bytes=to)
    return audit_kernel(row, cfg)


def test_an_inner_dimension_keeps_its_size_and_the_outer_one_shrinks(tmp_path, handed):
    out = audit_row("reduced_matmul", MATMUL, tmp_path, over=1 << 20, to=MATMUL_BYTES // 16)
    assert out["status"] == "ok", out["message"]
    assert handed.base == [{"M": 32}]
    want = {"reduced": "M=32", "reference_shape_bytes": MATMUL_BYTES,
            "reduced_shape_bytes": (2 * 32 * 16 + 32 * 32) * 4}
    assert shapes(out) == [want], shapes(out)


def test_without_a_reduced_shape_the_reference_takes_it_is_judged_at_its_own(tmp_path, handed):
    out = audit_row("reduced_never", BROADCAST, tmp_path, over=1 << 20, to=64 << 10)
    assert out["status"] == "ok", out["message"]
    assert handed.base == [{}]
    assert "the reference fails at the reduced shape batch_size=" in out["message"]
    assert "the reference fails at the reduced shape width=" in out["message"]
    assert "judged at the reference shape" in out["message"]
    assert all(s is None for s in shapes(out))


def test_a_candidate_that_loads_only_at_the_reference_shape_keeps_its_load_status(tmp_path):
    # Its module refuses any other batch: every worker of the kernel loads at the reduced shape.
    only_64 = FAITHFUL + "\nassert batch_size == 64, 'built for batch 64 only'\n"
    out = audit("reduced_load_fails", only_64, tmp_path)
    assert out["status"] == "import_error", out["message"]
    assert out["message"].startswith("judged at a reduced shape batch_size=2"), out["message"]
    assert "the candidate: " in out["message"] and "built for batch 64 only" in out["message"]
    assert out["verdicts"] == []


def test_the_cli_reduces_over_1_gib_by_default_and_0_turns_it_off():
    from kcv.audit.__main__ import parser

    args = parser().parse_args(["c.jsonl", "--store", "s.db"])
    assert (args.reduce_over_gb, args.reduce_to_gb) == (1.0, 0.125)
    assert parser().parse_args(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "0"]
                               ).reduce_over_gb == 0


def test_the_children_of_procs_get_the_same_reduction_even_when_it_is_off(tmp_path):
    from kcv.audit.orchestrator import AuditConfig
    from kcv.audit.parallel import ParallelAuditor

    for over in (0, 3 << 30):
        opts = AuditConfig(corpora=[], store=str(tmp_path / f"s{over}.db"),
                            reduce_over_bytes=over, reduce_to_bytes=1 << 26)
        cmd = ParallelAuditor(opts, 2).child_command(["x"], 1, 1.0, True, None)
        assert float(cmd[cmd.index("--reduce-over-gb") + 1]) * 2**30 == over
        assert float(cmd[cmd.index("--reduce-to-gb") + 1]) == 1 / 16


def test_the_cli_refuses_a_limit_not_above_the_target(capsys):
    from kcv.audit.__main__ import main

    with pytest.raises(SystemExit):
        main(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "0.1"])
    assert "must exceed --reduce-to-gb" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["c.jsonl", "--store", "s.db", "--reduce-over-gb", "-1"])


# reduced.search on its own, with a stand-in for the sizing: the bytes each shape measures are
# given, so every branch is reached without workers.
SEARCH = Sized(100 << 20, 0, False, {"batch_size": 64, "K": 1024, "M": 512},
               ["batch_size", "K", "M"], [])


class Pair:
    def __init__(self, override):
        self.override, self.closed = dict(override), 0

    def close(self):
        self.closed += 1


def run_search(measure, io=100 << 20, over=10 << 20, to=1 << 20, sized=SEARCH):
    made, notes = [], []

    def try_shape(override, desc):
        assert desc == reduced.describe(override)
        small = measure(override)
        if small is None:
            raise ShapeRefused("no")
        made.append(Pair(override))
        return made[-1], small

    try:
        result = reduced.search(sized, io, over, to, try_shape, notes, drop=Pair.close)
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
    assert isinstance(result, reduced.NoReducedShape) and "no reduced shape" in str(result)
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


def test_search_keeps_a_shape_within_the_limit_however_little_it_shrank():
    # 1120 bytes of which 520 do not scale with the batch: 568 is under the limit of 1000.
    (pair, override, small), made, notes = run_search(lambda o: 568, io=1120, over=1000, to=100)
    assert small == 568 and pair is made[0] and pair.closed == 0


def test_search_returns_the_held_best_without_starting_it_again():
    sized = Sized(4 * 8 * 4, 0, False, {"batch_size": 4}, ["batch_size"], [])
    (pair, override, small), made, notes = run_search(lambda o: 20 << 20, sized=sized)
    assert override == {"batch_size": 1} and small == 20 << 20
    assert made == [pair] and pair.closed == 0  # one start: nothing further to try
    assert any("smallest found" in n for n in notes), notes


def test_search_with_no_size_to_shrink_says_so():
    sized = Sized(100 << 20, 0, True, {"n": 7}, [], [])
    result, made, notes = run_search(lambda o: 1, sized=sized)
    assert made == [] and str(result) == (
        "no reduced shape: get_inputs reads no module-level int constant (the shape is fixed)")


def test_mark_puts_the_shape_into_every_verdicts_evidence():
    records = [{"evidence_json": json.dumps({"probe": "a"})}, {"evidence_json": ""}]
    reduced.mark(records, {"reduced": "batch_size=2"})
    assert [json.loads(r["evidence_json"]) for r in records] == [
        {"battery_shape": {"reduced": "batch_size=2"}, "probe": "a"},
        {"battery_shape": {"reduced": "batch_size=2"}}]
