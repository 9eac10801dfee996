"""The compile cache a kernelbench load sets up: TORCH_EXTENSIONS_DIR is one directory per code
text under cache_dir/torch_extensions, so two corpus rows that both call load_inline with the
same name ("custom_softmax") but other sources never build into one directory, while workers of
the same code (the rescaled-shape pair) share their build. Building needs a compiler and minutes;
instead each candidate asks torch.utils.cpp_extension, at import, where it would build
"custom_softmax" and writes the answer into a file the test reads. Triton's cache stays shared
(it is content-addressed). Our own small candidates, not corpus code."""

import hashlib
import os

import pytest

torch = pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from kcv.worker.problem import extensions_dir  # noqa: E402
from worker_client import WorkerClient  # noqa: E402

PROBE = '''
import os
import torch.utils.cpp_extension as cpp

with open({report!r}, "w") as f:
    f.write(cpp._get_build_directory("custom_softmax", False) + "\\n")
    f.write(os.environ["TRITON_CACHE_DIR"])
# variant {variant}
'''


def probe(worker, cache_dir, report, variant):
    cand = PROBE.format(report=str(report), variant=variant) + kb.ADD_CANDIDATE
    reply = worker.load(kind="kernelbench", role="candidate", reference_code=kb.ADD,
                        candidate_code=cand, seed=1, cache_dir=cache_dir, device="cpu")
    assert reply["type"] == "loaded", reply
    build, triton = report.read_text().splitlines()
    return cand, build, triton


def test_extensions_dir_is_the_first_16_hex_of_the_code_sha256():
    code = "load_inline(name='custom_softmax', ...)"
    digest = hashlib.sha256(code.encode()).hexdigest()[:16]
    assert extensions_dir("/c", code) == os.path.join("/c", "torch_extensions", digest)
    assert extensions_dir("/c", code + " ") != extensions_dir("/c", code)


def test_other_code_builds_the_same_extension_name_elsewhere(worker, tmp_path):
    cache = str(tmp_path / "cache")
    code_a, build_a, triton_a = probe(worker, cache, tmp_path / "a.txt", "a")
    code_b, build_b, triton_b = probe(worker, cache, tmp_path / "b.txt", "b")
    assert build_a != build_b
    assert build_a == os.path.join(extensions_dir(cache, code_a), "custom_softmax")
    assert build_b == os.path.join(extensions_dir(cache, code_b), "custom_softmax")
    assert triton_a == triton_b == os.path.join(cache, "triton")


def test_the_same_code_in_another_worker_shares_its_build_directory(worker, tmp_path):
    cache = str(tmp_path / "cache")
    _, first, _ = probe(worker, cache, tmp_path / "r.txt", "same")
    other = WorkerClient()  # e.g. the rescaled-shape worker of the same kernel
    try:
        assert other.hello()["type"] == "hello"
        _, second, _ = probe(other, cache, tmp_path / "r.txt", "same")
    finally:
        other.close()
    assert first == second
