"""The GLR training recipe on the CPU (bench/glr/train_lm.py, docs/glr/training.md): the corpus
script, the fp32 reference recurrences, and a few --tiny training steps through fla's layers.

The corpus is built by scripts/build-text-corpus from this repository's docs/ (real text that
every checkout has, a few hundred KB). Two families run on the kcv backend (kcv's fp64 CPU
reference behind fla's dispatch) and on the reference backend: GDN (delta rule, scalar gate) and
GLA (no delta rule, per-channel gate). fla's own backend and the full configuration need a CUDA
device and are skipped here. Skipped whole when fla (flash-linear-attention) is not installed."""

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fla.layers")  # flash-linear-attention and the transformers it imports

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "glr"))

import dataclasses  # noqa: E402

from train import backends, loop, model, reference  # noqa: E402

CPU = torch.device("cpu")
STEPS = 8
U32 = torch.finfo(torch.float32).eps


def build_corpus(out, *extra):
    cmd = [sys.executable, os.path.join(REPO, "scripts", "build-text-corpus"), "--root",
           os.path.join(REPO, "docs"), "--out", str(out), "--min-bytes", "0",
           "--val-fraction", "0.2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out)
    return str(out)


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    return dataclasses.replace(model.TINY, steps=STEPS, eval_every=STEPS // 2)


def test_corpus_is_deterministic_and_split_by_document(corpus, tmp_path):
    manifest = json.load(open(os.path.join(corpus, "manifest.json")))
    build_corpus(tmp_path)
    again = json.load(open(os.path.join(tmp_path, "manifest.json")))
    assert [s["sha256"] for s in manifest["splits"].values()] == \
        [s["sha256"] for s in again["splits"].values()]
    for split, s in manifest["splits"].items():
        data = open(os.path.join(corpus, s["file"]), "rb").read()
        assert len(data) == s["bytes"] > 0, split
        assert data.count(b"\x00") == s["documents"] and data.endswith(b"\x00"), split
    rows = [line.split("\t") for line in open(os.path.join(corpus, "documents.tsv"))][1:]
    assert {r[1] for r in rows} == {"train", "val"}
    assert len({r[3] for r in rows}) == len(rows), "a document is in both splits or twice"


def test_corpus_too_small_names_the_packages(tmp_path):
    cmd = [sys.executable, os.path.join(REPO, "scripts", "build-text-corpus"), "--root",
           os.path.join(REPO, "docs"), "--out", str(tmp_path), "--min-bytes", str(1 << 40)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 1
    assert "debian-reference-en" in result.stderr and "--install-packages" in result.stderr
    assert not os.path.exists(os.path.join(tmp_path, "train.bin"))


# fla's token-serial references (fp32) of the five recurrences, as (q, k, v, gate, beta) -> o.
def _fla_references():
    from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
    from fla.ops.gla.naive import naive_recurrent_gla
    from fla.ops.kda.naive import naive_recurrent_kda
    from fla.ops.linear_attn.naive import naive_recurrent_linear_attn
    from fla.ops.simple_gla.naive import naive_recurrent_simple_gla

    return {
        "gdn": ("scalar", True, lambda q, k, v, g, b: naive_recurrent_gated_delta_rule(
            q, k, v, b, g)[0]),
        "kda": ("vector", True, lambda q, k, v, g, b: naive_recurrent_kda(q, k, v, g, b)[0]),
        "gla": ("vector", False, lambda q, k, v, g, b: naive_recurrent_gla(q, k, v, g)[0]),
        "ssd": ("scalar", False, lambda q, k, v, g, b: naive_recurrent_simple_gla(
            q, k, v, g)[0]),
        "la": (None, False, lambda q, k, v, g, b: naive_recurrent_linear_attn(q, k, v)[0]),
    }


@pytest.mark.parametrize("family", ["gdn", "kda", "gla", "ssd", "la"])
@pytest.mark.parametrize("chunk", [None, 8])
def test_reference_recurrence_matches_fla_token_serial(family, chunk):
    """T = 37 leaves a partial last chunk; the reference runs in fp64 here, fla's in fp32, so the
    difference is fla's rounding: each output sums ~T·K fp32-rounded terms (4·T·K·u32, the bound
    test_glr_fla.py uses for the same references)."""
    gate, delta, ref = _fla_references()[family]
    g = torch.Generator().manual_seed(3)
    B, T, H, K, V = 2, 37, 2, 8, 6
    q, k, v = (torch.randn(B, T, H, d, generator=g, dtype=torch.float64) for d in (K, K, V))
    k = k / k.norm(dim=-1, keepdim=True)
    shape = {"scalar": (B, T, H), "vector": (B, T, H, K)}.get(gate)
    log_a = -0.5 * torch.rand(*shape, generator=g, dtype=torch.float64) if shape else None
    beta = torch.rand(B, T, H, generator=g, dtype=torch.float64) if delta else None
    ours = reference.recurrence(q, k, v, log_a, beta, chunk=chunk)
    theirs = ref(q, k, v, log_a, beta).double()
    tol = 4 * T * K * U32
    torch.testing.assert_close(ours, theirs, rtol=tol, atol=tol)


def test_reference_refuses_what_it_does_not_run():
    q = torch.zeros(1, 4, 1, 8)
    with pytest.raises(NotImplementedError, match="initial_state"):
        reference.chunk_gla(q, q, q, q, initial_state=torch.zeros(1, 1, 8, 8))
    with pytest.raises(NotImplementedError, match="training path"):
        reference.OPS["fused_recurrent_gla"](q, q, q, q)


@pytest.mark.parametrize("family", ["gdn", "gla"])
def test_tiny_training_on_kcv_and_reference(family, corpus, tiny, tmp_path):
    runs = {}
    for name, backend in (("kcv", "kcv"), ("kcv2", "kcv"), ("reference", "reference")):
        runs[name] = loop.run(family, backend, tiny, corpus, tmp_path / f"{name}.jsonl", CPU,
                              progress=False)
    for name, r in runs.items():
        losses = r["losses"]
        assert len(losses) == STEPS and all(map(math.isfinite, losses)), (name, losses)
        assert sum(losses[-3:]) < sum(losses[:3]), (name, losses)
        evals = 2 * math.ceil(tiny.eval_windows / tiny.batch)  # 2 evaluations
        assert r["recurrence_calls"] == tiny.layers * (STEPS + evals), name
    assert runs["kcv"]["kcv_calls"] == runs["kcv"]["recurrence_calls"]
    assert loop.compare(runs["kcv"]["losses"], runs["kcv2"]["losses"])["identical"]
    assert runs["kcv"]["parameters_sha256"] == runs["kcv2"]["parameters_sha256"]
    # Step 0 runs both backends on the same weights and batch; their recurrence outputs differ by
    # the fp32 reference's rounding, 4·T·K·u32 relative (see the test above), and the loss, an
    # average of log-softmax terms of logits that the output moves linearly, by no more.
    first = [runs[n]["losses"][0] for n in ("kcv", "reference")]
    tol = 4 * tiny.seq_len * tiny.head_dim * U32
    assert abs(first[0] - first[1]) <= tol * first[0], first
    log = [json.loads(line) for line in open(tmp_path / "kcv.jsonl")]
    assert [r["kind"] for r in log[:2]] == ["config", "train"] and log[-1]["kind"] == "summary"
    assert {"step", "loss", "tokens_per_s", "elapsed_s"} <= set(log[1])


def test_cli_check_repro_and_plot(corpus, tmp_path):
    """train_lm.py --check-repro runs kcv twice and writes the verdict, --compare-to makes the
    second run its own command; plot_curves.py draws the logs into one SVG and a table."""
    cmd = [sys.executable, os.path.join(REPO, "bench", "glr", "train_lm.py"), "--family", "gdn",
           "--backend", "kcv", "--tiny", "--device", "cpu", "--steps", "4", "--data", corpus,
           "--out", str(tmp_path), "--check-repro", "--no-progress"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    verdict = json.load(open(tmp_path / "gdn" / "kcv.repro.json"))
    assert verdict["identical"] and verdict["parameters_identical"], verdict
    # The second run as its own command, against the first run's log.
    os.remove(tmp_path / "gdn" / "kcv.repro.json")
    result = subprocess.run(cmd[:-2] + ["--compare-to", str(tmp_path / "gdn" / "kcv.jsonl"),
                                        "--no-progress"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(tmp_path / "gdn" / "kcv.repro.json"))["identical"]
    svg = tmp_path / "curves.svg"
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "glr", "plot_curves.py"),
                    "--runs", str(tmp_path), "--out", str(svg), "--table",
                    str(tmp_path / "summary.md"), "--agreement", str(tmp_path / "agreement.md")],
                   check=True, capture_output=True)
    assert "| gdn | kcv |" in (tmp_path / "summary.md").read_text()
    # kcv's only run, 4 steps, no other backend, its second run equal over all 4.
    assert "| gdn | 4 | 0 | 0 | — | — | identical (4) |" in (tmp_path / "agreement.md").read_text()
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and any(e.tag.endswith("path") for e in root.iter())


def test_compare_finds_the_first_difference():
    assert loop.compare([1.0, 2.0], [1.0, 2.0])["identical"]
    verdict = loop.compare([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    assert not verdict["identical"] and verdict["first_difference"]["step"] == 1
    assert not loop.compare([1.0], [1.0, 2.0])["identical"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fla's Triton kernels need CUDA")
def test_fla_backend_runs_on_cuda(corpus, tiny, tmp_path):
    # The guard may be active on this GPU (backends.fla_hopper_guard); the log says which.
    log = tmp_path / "fla.jsonl"
    r = loop.run("gla", "fla", tiny, corpus, log, torch.device("cuda"), progress=False,
                 lift_fla_guard=True)
    assert all(map(math.isfinite, r["losses"]))
    config = json.loads(log.read_text().splitlines()[0])
    assert config["kind"] == "config" and config["fla_hopper_guard"] in ("inactive", "lifted")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the guard applies on CUDA only")
def test_fla_backend_names_the_guard_it_would_need_lifted(corpus, tiny, tmp_path):
    import fla.ops.common.chunk_o as chunk_o
    if chunk_o.TRITON_ABOVE_3_7_1:
        pytest.skip("fla's Hopper guard is not active here")
    with pytest.raises(RuntimeError, match="--lift-fla-guard"):
        with backends.bound("fla", "gla", torch.device("cuda")):
            pass


def test_fla_backend_refuses_the_cpu():
    with pytest.raises(RuntimeError, match="CUDA"):
        with backends.bound("fla", "gla", CPU):
            pass
