"""The build cache a kernelbench load sets up (kcv.worker.buildcache): TORCH_EXTENSIONS_DIR and
TRITON_CACHE_DIR are one entry per role, code text and toolchain under cache_dir/builds, so two
corpus rows that both call load_inline with the same name ("custom_softmax") but other sources
never build into one directory, while workers of the same code (the rescaled-shape pair, a
re-run) share their build.

Where a test needs a real build it uses torch.utils.cpp_extension.load on a C++ file that
includes no torch header: torch's own JIT path (its versioner, its lock in the build directory,
ninja, the import of the library) at a second or two of compiling, where a load_inline of
torch/extension.h takes about half a minute on two cores. Our own small candidates, not corpus
code."""

import json
import os
import shutil
import threading

import pytest

torch = pytest.importorskip("torch")

import kb_problems as kb  # noqa: E402
from kcv import buildcache as layout  # noqa: E402
from kcv.worker import buildcache  # noqa: E402
from worker_client import WorkerClient  # noqa: E402

PROBE = '''
import os
import torch.utils.cpp_extension as cpp

with open({report!r}, "w") as f:
    f.write(cpp._get_build_directory("custom_softmax", False) + "\\n")
    f.write(os.environ["TRITON_CACHE_DIR"])
# variant {variant}
'''

# A candidate that builds a library through torch's JIT path with `flags`, after waiting (up to
# 60 s) until `peers` workers of it reached that point, then reports what it loaded into
# <out>/<its pid>.json.
BUILD = '''
import glob, json, os, time
import torch.utils.cpp_extension as cpp

open(os.path.join({out!r}, "%d.ready" % os.getpid()), "w").close()
deadline = time.monotonic() + 60
while len(glob.glob(os.path.join({out!r}, "*.ready"))) < {peers} and time.monotonic() < deadline:
    time.sleep(0.01)
lib = cpp.load(name="kcv_tiny", sources=[{source!r}], extra_cflags={flags!r},
               is_python_module=False)
st = os.stat(lib)
with open(os.path.join({out!r}, "%d.json" % os.getpid()), "w") as f:
    json.dump({{"lib": lib, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns}}, f)
'''

TINY_CPP = 'extern "C" int kcv_tiny_answer() { return 42; }\n'


def probe(worker, cache_dir, report, variant):
    cand = PROBE.format(report=str(report), variant=variant) + kb.ADD_CANDIDATE
    reply = worker.load(kind="kernelbench", role="candidate", reference_code=kb.ADD,
                        candidate_code=cand, seed=1, cache_dir=cache_dir, device="cpu")
    assert reply["type"] == "loaded", reply
    build, triton = report.read_text().splitlines()
    return cand, build, triton


def entry_of(cache_dir, code, role="candidate"):
    """The entry a CPU load of `code` in `role` uses (the test process has the workers'
    toolchain: same interpreter, same environment)."""
    return buildcache.entry_dir(cache_dir, buildcache.key(role, code, buildcache.toolchain("cpu")))


def build_candidate(tmp_path, name, flags=("-O1",), peers=1):
    """(code, out): a BUILD candidate and the directory its workers report into."""
    source = tmp_path / "tiny.cpp"
    if not source.exists():
        source.write_text(TINY_CPP)
    out = tmp_path / name
    out.mkdir()
    code = BUILD.format(out=str(out), peers=peers, source=str(source),
                        flags=list(flags)) + kb.ADD_CANDIDATE
    return code, out


def reports(out):
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def load_fields(code, cache_dir):
    return dict(kind="kernelbench", role="candidate", reference_code=kb.ADD,
                candidate_code=code, seed=1, cache_dir=str(cache_dir), device="cpu")


def library_builds(entry):
    """How many times ninja linked kcv_tiny's library in the entry (its .ninja_log lines)."""
    log = os.path.join(entry, "torch_extensions", "kcv_tiny", ".ninja_log")
    with open(log) as f:
        return sum(1 for line in f if line.split("\t")[3:4] == ["kcv_tiny.so"])


# --- keys -------------------------------------------------------------------------------------
def test_the_key_changes_with_the_code_its_flags_the_role_and_the_toolchain(monkeypatch):
    code = "load_inline(name='custom_softmax', extra_cflags=['-O2'], ...)"
    tools = buildcache.toolchain("cpu")
    k = buildcache.key("candidate", code, tools)
    assert len(k) == 32 and k == buildcache.key("candidate", code, dict(tools))
    assert buildcache.key("candidate", code.replace("-O2", "-O3"), tools) != k
    assert buildcache.key("candidate", code + " ", tools) != k
    assert buildcache.key("reference", code, tools) != k
    for field, value in [("device", "cuda"), ("cuda_arch", ["9.0"]), ("python", ["cpython-312"]),
                         ("machine", "aarch64"), ("cxx", ["/usr/bin/clang++", 1, 2])]:
        assert buildcache.key("candidate", code, {**tools, field: value}) != k, field
    # a CPU load on a host with GPUs: torch still builds CUDA sources for those it sees
    monkeypatch.setattr(buildcache, "_gpu_models", lambda: ["Model: NVIDIA H200"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    gpu_host = buildcache.key("candidate", code, buildcache.toolchain("cpu"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert len({k, gpu_host, buildcache.key("candidate", code, buildcache.toolchain("cpu"))}) == 3
    monkeypatch.setattr(buildcache, "_gpu_models", lambda: [])
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0")
    assert buildcache.key("candidate", code, buildcache.toolchain("cpu")) != k
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    monkeypatch.setattr(buildcache, "_torch_version_text", lambda: "__version__ = '9.9.9'\n")
    assert buildcache.key("candidate", code, buildcache.toolchain("cpu")) != k


# --- where loads build ------------------------------------------------------------------------
def test_other_code_builds_the_same_extension_name_elsewhere(worker, tmp_path):
    cache = str(tmp_path / "cache")
    code_a, build_a, triton_a = probe(worker, cache, tmp_path / "a.txt", "a")
    code_b, build_b, triton_b = probe(worker, cache, tmp_path / "b.txt", "b")
    assert build_a != build_b
    assert build_a == os.path.join(entry_of(cache, code_a), "torch_extensions", "custom_softmax")
    assert build_b == os.path.join(entry_of(cache, code_b), "torch_extensions", "custom_softmax")
    assert triton_a == os.path.join(entry_of(cache, code_a), "triton") != triton_b


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


# --- real builds ------------------------------------------------------------------------------
def test_two_workers_building_one_key_at_once_build_once_and_load_the_same_library(tmp_path):
    cache = tmp_path / "cache"
    code, out = build_candidate(tmp_path, "shared", peers=2)
    workers = [WorkerClient(), WorkerClient()]
    replies = [None, None]

    def run(i):
        workers[i].start_load(**load_fields(code, cache))
        replies[i] = workers[i].finish_load(timeout=180)

    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r and r["type"] == "loaded" for r in replies), \
            (replies, workers[0].stderr(), workers[1].stderr())
    finally:
        for w in workers:
            w.close()
    entry = entry_of(str(cache), code)
    seen = reports(out)
    assert len(seen) == 2
    assert seen[0] == seen[1]  # one library: same path, same inode, same mtime
    assert seen[0]["lib"].startswith(os.path.join(entry, "torch_extensions", "kcv_tiny") + os.sep)
    assert library_builds(entry) == 1
    assert buildcache.is_built(entry)


def test_a_failed_build_leaves_no_entry_and_a_changed_flag_builds_anew(worker, tmp_path):
    cache = tmp_path / "cache"
    bad, _ = build_candidate(tmp_path, "bad", flags=("-fkcv-no-such-flag",))
    reply = worker.load(timeout=180, **load_fields(bad, cache))
    assert reply["type"] == "error" and "compile_error" in json.dumps(reply), reply
    assert not buildcache.is_built(entry_of(str(cache), bad))
    good, out = build_candidate(tmp_path, "good", flags=("-O1",))
    assert entry_of(str(cache), good) != entry_of(str(cache), bad)
    reply = worker.load(timeout=180, **load_fields(good, cache))
    assert reply["type"] == "loaded", reply
    assert buildcache.is_built(entry_of(str(cache), good))
    assert reports(out)[0]["lib"].startswith(entry_of(str(cache), good) + os.sep)


def fresh_load(code, cache):
    """A load in a fresh worker process (torch's versioner keeps what a process built before)."""
    w = WorkerClient()
    try:
        reply = w.load(timeout=180, **load_fields(code, cache))
        assert reply["type"] == "loaded", (reply, w.stderr())
    finally:
        w.close()


def test_a_published_entry_restored_at_the_same_path_loads_without_building(tmp_path):
    """The sandbox's hand-over (kcv.sandbox.KernelSandbox): a kernel's scratch, seen at
    cache_dir, is published into the shared cache when it ends and restored into the next
    scratch of the same code, which ninja then finds up to date."""
    cache, shared = tmp_path / "cache", tmp_path / "shared"
    code, out = build_candidate(tmp_path, "tiny")
    fresh_load(code, cache)
    (first,) = reports(out)
    key = os.path.basename(entry_of(str(cache), code))
    assert layout.publish(str(cache), str(shared), code) == [key]
    assert layout.publish(str(cache), str(shared), code) == []  # published once
    shutil.rmtree(cache)  # the kernel's scratch dies with it
    assert layout.restore(str(shared), code, str(cache)) == [key]
    fresh_load(code, cache)
    first_again, second = sorted(reports(out), key=lambda r: r != first)
    assert first_again == first
    assert second["lib"] == first["lib"] and second["mtime_ns"] == first["mtime_ns"]
    assert library_builds(entry_of(str(cache), code)) == 1


# --- publishing -------------------------------------------------------------------------------
def test_publish_files_entries_under_the_code_kcv_holds_and_copies_only_finished_files(tmp_path):
    scratch, shared = tmp_path / "scratch", tmp_path / "shared"
    done, unfinished = "a" * 32, "b" * 32
    for k in (done, unfinished, "not-a-key"):
        (scratch / "builds" / k / "torch_extensions" / "ext").mkdir(parents=True)
        (scratch / "builds" / k / "torch_extensions" / "ext" / "ext.so").write_bytes(b"\x7fELF")
    for k in (done, "not-a-key"):
        (scratch / "builds" / k / buildcache.MARKER).write_text("{}")
    secret = tmp_path / "secret"
    secret.write_text("kcv's")
    os.symlink(secret, scratch / "builds" / done / "torch_extensions" / "ext" / "link.so")
    os.symlink(tmp_path, scratch / "builds" / done / "triton")  # a directory link
    linked = "c" * 32  # a marker that is a link to a file of kcv's
    (scratch / "builds" / linked).mkdir()
    os.symlink(secret, scratch / "builds" / linked / buildcache.MARKER)
    code = "class ModelNew: ..."
    assert layout.publish(str(scratch), str(shared), code) == [done]
    home = shared / "candidates" / layout.source_key(code)
    assert sorted(os.listdir(home)) == [done]
    assert (home / done / "torch_extensions" / "ext" / "ext.so").read_bytes() == b"\x7fELF"
    assert not os.path.lexists(home / done / "torch_extensions" / "ext" / "link.so")
    assert not os.path.lexists(home / done / "triton")
    # another code text restores nothing of it
    assert layout.restore(str(shared), code + "\n", str(tmp_path / "other")) == []
    assert not (tmp_path / "other").exists()
    # a scratch publishes at most PUBLISH_ENTRIES entries
    many = tmp_path / "many"
    for i in range(layout.PUBLISH_ENTRIES + 2):
        (many / "builds" / f"{i:032x}").mkdir(parents=True)
        (many / "builds" / f"{i:032x}" / buildcache.MARKER).write_text("{}")
    assert len(layout.publish(str(many), str(shared), "many")) == layout.PUBLISH_ENTRIES
    # an entry over the limit is not published
    scratch2 = tmp_path / "scratch2"
    shutil.copytree(scratch / "builds" / done, scratch2 / "builds" / done, symlinks=True)
    assert layout.publish(str(scratch2), str(shared), "big", limit=2) == []
    assert not (shared / "candidates" / layout.source_key("big")).exists() or \
        os.listdir(shared / "candidates" / layout.source_key("big")) == []


def test_threads_cap_the_compile_jobs_of_a_workers_builds(tmp_path):
    report = tmp_path / "jobs.txt"
    code = (f"import os\nopen({str(report)!r}, 'w').write(os.environ.get('MAX_JOBS', ''))\n"
            + kb.ADD_CANDIDATE)
    w = WorkerClient(env={"MAX_JOBS": "64"}, args=("--threads", "3"))
    try:
        assert w.load(**load_fields(code, tmp_path / "cache"))["type"] == "loaded", w.stderr()
    finally:
        w.close()
    assert report.read_text() == "3"
