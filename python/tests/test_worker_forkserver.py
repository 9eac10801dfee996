"""Workers forked from a warm parent (kcv.worker.forkserver via kcv.worker.spawn, docs/06 §8),
driven by kcv's own executor (kcv._core.Worker): to the trusted side such a worker is the plain
`python -m kcv.worker` in every way the protocol sees — a load reply, results, a segfault read
as a crash of signal 11, a SIGKILL as one of signal 9, an endless call killed at its timeout with nothing left running, an
address-space limit — and a start that finds no server is a cold start, not a failure. The
audit's two servers (reference and candidate roles) are separate processes. Skipped when
kcv._core is not built."""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
core = pytest.importorskip("kcv._core")

import kb_problems as kb  # noqa: E402

from kcv.audit.forkservers import ForkServers, start_with_lifeline  # noqa: E402
from kcv.audit.workers import worker_command  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = {"kind": "run", "seed": 7}
X = np.ones((4, 8), np.float32)


def hostile(name):
    with open(os.path.join(HERE, "hostile", name + ".py"), encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def servers():
    s = ForkServers([None], threads=1)
    assert s.command("candidate", None)[2] == "kcv.worker"  # a cold start until it is ready
    assert s.wait_ready(300) == []
    yield s
    s.close()


def test_a_server_that_died_gives_cold_starts():
    s = ForkServers([None], threads=1, roles=("candidate",))
    try:
        assert s.wait_ready(300) == []
        assert "--socket" in " ".join(s.command("candidate", None))
        os.kill(s.pid("candidate", None), 9)
        deadline = time.monotonic() + 10  # until the kernel has reaped what we killed
        while s.command("candidate", None) != worker_command(None, 1):
            assert time.monotonic() < deadline, s.command("candidate", None)
            time.sleep(0.05)
        assert s.wait_ready(1) == ["candidate server (GPU None) is not ready"]
    finally:
        s.close()


def test_a_server_ends_with_its_lifeline_and_takes_its_workers(tmp_path):
    """The launcher's end of the lifeline closing (as it does when the launcher dies, even one
    killed before the server's PR_SET_PDEATHSIG is set) ends the server and its workers."""
    sock = str(tmp_path / "server.sock")
    proc, lifeline = start_with_lifeline(
        lambda fd: [sys.executable, "-m", "kcv.worker.forkserver", "--socket", sock, "--threads",
                    "1", "--lifeline", str(fd)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        w, info = started(worker_command(None, 1, socket=sock), kb.ADD_CANDIDATE,
                          str(tmp_path / "c"))
        assert info["reply"]["type"] == "loaded", info
        workers = descendants_alive(proc.pid)
        assert workers, "the server forked no worker"
        os.close(lifeline)
        lifeline = None
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while left := [p for p in workers if running(p)]:
            assert time.monotonic() < deadline, f"workers {left} outlived their server"
            time.sleep(0.05)
        w.close()
    finally:
        if lifeline is not None:
            os.close(lifeline)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def running(pid):
    """True while `pid` is a live process (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def load(cand, cache):
    return {"kind": "kernelbench", "role": "candidate", "reference_code": kb.ADD,
            "candidate_code": cand, "seed": 2, "device": "cpu", "cache_dir": cache,
            "op": "kernelbench"}


def started(command, cand, cache, **kw):
    w = core.Worker(command, load(cand, cache), name="ModelNew", startup_timeout_ms=600_000, **kw)
    return w, w.start()


def descendants_alive(pid):
    """Pids whose parent is `pid` (the server's children), from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def forked_worker(servers, client_pid):
    """The candidate server's child in the process group of `client_pid` (kcv's child)."""
    mine = [p for p in descendants_alive(servers.pid("candidate", None))
            if os.getpgid(p) == client_pid]
    assert len(mine) == 1, mine
    return mine[0]


def test_the_roles_have_separate_servers(servers):
    ref, cand = servers.command("reference", None), servers.command("candidate", None)
    assert "kcv.worker.spawn" in ref and "kcv.worker.spawn" in cand
    assert ref[ref.index("--socket") + 1] != cand[cand.index("--socket") + 1]


def test_a_forked_worker_answers_as_a_plain_one(servers, tmp_path):
    pool = ThreadPoolExecutor(1)  # a worker ends with the thread that started it
    cmd = servers.command("candidate", None)
    w, info = pool.submit(started, cmd, kb.ADD_CANDIDATE, str(tmp_path)).result()
    try:
        assert info["name"] == "ModelNew" and info["reply"]["type"] == "loaded"
        r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
        assert r.status == "ok" and r.all_written and r.inputs_unchanged, r.message
        assert np.array_equal(r.outputs[0], X + 3.0 * X * 0.5)
        worker_pid = forked_worker(servers, info["pid"])
        assert worker_pid != info["pid"]  # kcv's child is the spawn client; the server forked
    finally:
        pool.submit(w.close).result()
    deadline = time.monotonic() + 30
    while worker_pid in descendants_alive(servers.pid("candidate", None)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker_pid not in descendants_alive(servers.pid("candidate", None))
    pool.shutdown()


def test_a_segfault_is_a_crash_of_signal_11(servers, tmp_path):
    pool = ThreadPoolExecutor(1)
    w, _ = pool.submit(started, servers.command("candidate", None), hostile("segfault"),
                       str(tmp_path)).result()
    r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
    assert r.status == "crash" and "signal 11" in r.message, r.message
    pool.submit(w.close).result()
    pool.shutdown()


def test_a_sigkill_reads_as_signal_9_not_as_the_spawn_clients_error(servers, tmp_path):
    # The spawn client ends as its worker ended; SIGKILL's action cannot be set, so it is sent
    # as it is (the OOM killer's signal must read as a kill, docs/08_audit.md §5).
    killed = kb.ADD_CANDIDATE.replace(
        "        return x + self.alpha * y * scale",
        "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)")
    assert killed != kb.ADD_CANDIDATE
    pool = ThreadPoolExecutor(1)
    w, _ = pool.submit(started, servers.command("candidate", None), killed,
                       str(tmp_path)).result()
    r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
    assert r.status == "crash" and "signal 9 (SIGKILL" in r.message, r.message
    pool.submit(w.close).result()
    pool.shutdown()


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP"])
def test_a_forked_worker_struck_by_a_signal_is_a_crash_of_signal_9(servers, tmp_path, sig):
    """SIGKILL from outside, or SIGSTOP (which the spawn client's watchdog ends with SIGKILL):
    the client dies of the same signal 9, so kcv reads a worker that died of a signal it did
    not send, not one it had to kill."""
    pool = ThreadPoolExecutor(1)
    w, info = pool.submit(started, servers.command("candidate", None), kb.ADD_CANDIDATE,
                          str(tmp_path)).result()
    os.kill(forked_worker(servers, info["pid"]), getattr(__import__("signal"), sig))
    r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
    assert r.status == "crash" and "signal 9" in r.message and "killed by kcv" not in r.message, \
        r.message
    assert w.workers_struck == 1
    pool.submit(w.close).result()
    pool.shutdown()


@pytest.mark.parametrize("line,code", [("signal 9", -9), ("signal 15", -15), ("exit 4", 4)])
def test_the_spawn_client_ends_as_its_worker_ended(line, code):
    run = f"import kcv.worker.spawn as s; s._mirror({line!r})"
    assert subprocess.run([sys.executable, "-c", run]).returncode == code


def test_an_endless_call_is_killed_with_its_worker(servers, tmp_path):
    pool = ThreadPoolExecutor(1)
    w, info = pool.submit(started, servers.command("candidate", None), hostile("infinite_loop"),
                          str(tmp_path)).result()
    worker_pid = forked_worker(servers, info["pid"])
    r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN,
                    timeout_ms=1500).result()
    assert r.status == "timeout" and "killed by kcv" in r.message, r.message
    deadline = time.monotonic() + 30
    while worker_pid in descendants_alive(servers.pid("candidate", None)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker_pid not in descendants_alive(servers.pid("candidate", None)), "it lives on"
    pool.submit(w.close).result()
    pool.shutdown()


def test_the_address_space_limit_reaches_the_forked_worker(servers, tmp_path):
    pool = ThreadPoolExecutor(1)
    limit = 24 << 30
    w, info = pool.submit(started, servers.command("candidate", None), kb.ADD_CANDIDATE,
                          str(tmp_path), memory_limit_bytes=limit).result()
    with open(f"/proc/{forked_worker(servers, info['pid'])}/limits", encoding="utf-8") as f:
        row = next(line for line in f if line.startswith("Max address space"))
    assert row.split()[3] == str(limit), row
    pool.submit(w.close).result()
    pool.shutdown()


def test_without_a_server_the_start_is_a_cold_one(tmp_path):
    pool = ThreadPoolExecutor(1)
    cmd = worker_command(None, 1, socket=str(tmp_path / "nobody-listens.sock"))
    w, info = pool.submit(started, cmd, kb.ADD_CANDIDATE, str(tmp_path)).result()
    assert info["reply"]["type"] == "loaded"
    r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
    assert r.status == "ok", r.message
    pool.submit(w.close).result()
    pool.shutdown()


def test_the_spawn_client_imports_nothing_heavy():
    code = ("import sys; import kcv.worker.spawn; "
            "print(sorted(m for m in ('torch', 'numpy', 'kcv._core') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out


# Raises unless the worker that runs it has frozen what its imports and load made (gc.freeze):
# torch's objects alone number in the hundreds of thousands, and a collection that scans them
# on every few hundred allocations of a call cost the reference worker a third of its time.
FROZEN = kb.ADD_CANDIDATE.replace("import torch\n", "import gc\nimport torch\n", 1).replace(
    "        return x + self.alpha * y * scale",
    "        if gc.get_freeze_count() < 50_000:\n"
    "            raise RuntimeError(f'{gc.get_freeze_count()} objects frozen')\n"
    "        return x + self.alpha * y * scale")


@pytest.mark.parametrize("forked", [True, False])
def test_a_worker_freezes_what_its_load_made(servers, tmp_path, forked):
    assert FROZEN != kb.ADD_CANDIDATE
    pool = ThreadPoolExecutor(1)
    cmd = servers.command("candidate", None) if forked else worker_command(None, 1)
    w, info = pool.submit(started, cmd, FROZEN, str(tmp_path)).result()
    try:
        assert info["reply"]["type"] == "loaded", info
        r = pool.submit(w.run, [("x", X), ("y", X)], [("f32", (4, 8))], task=RUN).result()
        assert r.status == "ok", r.message
    finally:
        pool.submit(w.close).result()
        pool.shutdown()
