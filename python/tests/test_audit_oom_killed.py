"""A worker the out-of-memory killer takes (src/worker/oom_kills.hpp, docs/08 §5): kcv reads the
kernel's oom_kill counts (its cgroup's, /proc/vmstat) as each worker starts and again when one
dies of a SIGKILL kcv did not send. A death while a count rose is the machine's limit: the
kernel is `out_of_memory`, run again alone and recorded so when it happens again, never a
`crash` blamed on the candidate. The same SIGKILL to the trusted reference without such a rise
stays the candidate's doing (docs/10_threat_model.md). On the kernel's last attempt (alone), a
shape other than the judge shape that the reference, or the candidate beside it, cannot run or
load in this machine's memory refuses its probes, and the kernel keeps the rest of its verdicts.

The first tests play the out-of-memory killer: KCV_OOM_COUNTERS names a file of theirs, and the
reference's float64 forward (the oracle's, run once the candidate's worker has started) raises
the count in it, or not, and kills its own process. One has the kernel's own killer do it,
in a memory cgroup of 64 MiB, where the host lets the test make one (root, cgroup v1)."""

import json
import re
import sqlite3

import pytest

from audit_helpers import run_audit

core = pytest.importorskip("kcv._core")
pytest.importorskip("torch")

REFERENCE = '''
import os
import signal

import torch
import torch.nn as nn

ROWS = 4
COLS = 8


def the_out_of_memory_killer():
@KILLER@


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        # the float64 run: the oracle's, once the candidate's worker has started
        if x.dtype == torch.float64 and x.device.type != "meta" and @WHERE@:
            the_out_of_memory_killer()
        return x + self.alpha * y * scale


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), 0.5]


def get_init_inputs():
    return [3.0]
'''

# The killer played: the count in `counter` raised (or not), then the process's own SIGKILL.
PLAYED = '''    if @RAISE@:
        with open(@COUNTER@) as f:
            n = int(f.read().split()[-1])
        with open(@COUNTER@, "w") as f:
            f.write(f"oom_kill {n + 1}\\n")
    os.kill(os.getpid(), signal.SIGKILL)'''

# The kernel's own killer: 1 GiB allocated in a memory cgroup of 64 MiB.
REAL = '''    with open(@CGROUP@ + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    hog = [bytearray(16 << 20) for _ in range(64)]
    return hog'''


def _row(killer: str, where: str = "True", **fill) -> dict:
    for key, value in fill.items():
        killer = killer.replace(f"@{key}@", repr(value))
    code = REFERENCE.replace("@KILLER@", killer).replace("@WHERE@", where)
    return {"id": "oom/add", "corpus": "oom", "level": 1, "problem_id": 1, "problem_name": "add",
            "language": "torch", "reference_code": code,
            "candidate_code": REFERENCE.replace("@KILLER@", "    pass").replace(
                "@WHERE@", "False").replace("class Model(", "class ModelNew(")}


def _played(counter, raise_the_count: bool, where: str = "True") -> dict:
    return _row(PLAYED, where, COUNTER=str(counter), RAISE=raise_the_count)


def _verify(tmp_path, warm_servers, row, **options):
    return core.verify_module(row, worker_command=warm_servers.command("reference", None),
                              device="cpu", cache_dir=str(tmp_path / "cache"),
                              memory_limit_bytes=32 << 30, profiles=["strict"], shrink=False,
                              **options)


@pytest.fixture
def counter(tmp_path, monkeypatch):
    path = tmp_path / "vmstat"
    path.write_text("pgfault 12\noom_kill 4\n")
    monkeypatch.setenv("KCV_OOM_COUNTERS", str(path))
    return path


@pytest.mark.parametrize("raise_the_count", [True, False])
def test_a_reference_the_oom_killer_took_is_out_of_memory_not_the_candidates_crash(
        tmp_path, warm_servers, counter, raise_the_count):
    out = _verify(tmp_path, warm_servers, _played(counter, raise_the_count))
    if raise_the_count:
        assert (out["status"], out["out_of_memory"]) == ("out_of_memory", True), out["message"]
        # one probe's trusted runs (a float64 run per semantics) restart it before the pipeline
        # stops between probes
        assert re.match(r"the out-of-memory killer took \d+ of the kernel's workers; probing "
                        r"stopped: the out-of-memory killer took a worker of this kernel",
                        out["message"]), out["message"]
        assert out["replica_verdict"] is None
        assert "candidate struck" not in out["message"]
    else:  # a SIGKILL with no count risen: the candidate's doing
        assert (out["status"], out["out_of_memory"]) == ("crash", False), out["message"]
        assert "trusted reference worker died of a signal" in out["message"]
        assert out["replica_verdict"] == "rejected"


def test_the_audit_runs_it_again_alone_and_records_out_of_memory(tmp_path, counter):
    corpus = tmp_path / "oom.jsonl"
    corpus.write_text(json.dumps(_played(counter, True)) + "\n")
    store = str(tmp_path / "oom.db")
    proc = run_audit(str(corpus), "--store", store, "--device", "cpu", "--jobs", "1",
                     "--profiles", "strict", "--no-progress", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        status, message = db.execute("SELECT status, message FROM kernels").fetchone()
    assert status == "out_of_memory", message
    # the prefix is the second run's: the first, with the retry still to come, records nothing
    assert message.startswith("also when run alone: the out-of-memory killer took"), message
    assert int(counter.read_text().split()[-1]) >= 6  # taken on each of the two runs


CGROUP_V1_MEMORY = "/sys/fs/cgroup/memory"


@pytest.fixture
def limited_cgroup():
    """A cgroup v1 memory group of 64 MiB, where this host lets the test make one (root, v1)."""
    import os
    import uuid

    path = os.path.join(CGROUP_V1_MEMORY, f"kcv-test-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(64 << 20))
    except OSError as e:
        pytest.skip(f"no cgroup v1 memory group can be made here ({e})")
    yield path
    for _ in range(50):  # the killed processes leave it as they are reaped
        try:
            os.rmdir(path)
            break
        except OSError:
            import time
            time.sleep(0.1)


def test_the_kernels_own_oom_killer_is_recognised(tmp_path, warm_servers, monkeypatch,
                                                 limited_cgroup):
    # No stand-in: the reference's float64 forward moves itself into a 64 MiB memory cgroup and
    # allocates 1 GiB, the kernel's out-of-memory killer ends it, and kcv reads the kill in the
    # counts it reads by default (/proc/vmstat here: a child cgroup's kill does not reach its
    # parent's v1 count).
    monkeypatch.delenv("KCV_OOM_COUNTERS")
    out = _verify(tmp_path, warm_servers, _row(REAL, CGROUP=limited_cgroup))
    assert (out["status"], out["out_of_memory"]) == ("out_of_memory", True), out["message"]
    assert out["message"].startswith("the out-of-memory killer took"), out["message"]


@pytest.mark.parametrize("last_attempt", [False, True])
def test_on_the_last_attempt_a_shape_too_large_for_the_machine_refuses_its_probes(
        tmp_path, warm_servers, counter, last_attempt):
    # at any shape but the judge shape's (ROWS x COLS = 32 elements)
    row = _played(counter, True, where="x.numel() != 32")
    out = _verify(tmp_path, warm_servers, row, last_attempt=last_attempt)
    assert int(counter.read_text().split()[-1]) > 4  # other shapes were tried and taken
    if not last_attempt:  # the machine's limit at that moment: run it again alone
        assert (out["status"], out["out_of_memory"]) == ("out_of_memory", True), out["message"]
        return
    # alone, the shapes the machine cannot hold are refused and the rest is judged
    _judged_with_those_shapes_refused(out, "CMP-01", "RES-01")


def _judged_with_those_shapes_refused(out, *gates, candidate=False):
    """A last attempt's outcome: `ok`, nothing failed, and each of `gates` had probes (the shapes
    the machine cannot hold) refused. Refused by the reference, they are out of the problem and
    CMP-01 passes on the rest; refused because the `candidate` could not run there, the gate
    cannot pass (a candidate could plead memory wherever it is wrong): `error`, naming why."""
    assert (out["status"], out["out_of_memory"]) == ("ok", False), out["message"]
    assert not any(v["verdict"] == "fail" for v in out["verdicts"]), out["verdicts"]
    verdicts = {v["gate"]: v for v in out["verdicts"]}
    key = "probes_not_run" if candidate else "probes_refused"
    refused = {v["gate"]: json.loads(v["evidence_json"]).get(key, 0) for v in out["verdicts"]}
    assert all(refused[g] > 0 for g in gates), refused
    if not candidate:
        assert verdicts["CMP-01"]["verdict"] == "pass", verdicts["CMP-01"]
        return
    for g in gates:
        assert verdicts[g]["verdict"] == "error", verdicts[g]
        assert verdicts[g]["reason"].startswith("not judged at every probe"), verdicts[g]
        assert "the candidate runs out of this machine's memory" in verdicts[g]["reason"]
    assert any(v["verdict"] == "pass" for v in out["verdicts"]), out["verdicts"]  # the rest kept


CANDIDATE_SHORT_OF_MEMORY = '''
import os
import signal

import torch
import torch.nn as nn

COUNTER = @COUNTER@
KILLED = @KILLED@


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        # any shape but the judge shape's (ROWS x COLS = 32 elements) is more than this machine has
        if x.device.type != "meta" and x.numel() != 32:
            if not KILLED:  # the allocator's error
                raise MemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")
            with open(COUNTER) as f:  # the out-of-memory killer, played
                n = int(f.read().split()[-1])
            with open(COUNTER, "w") as f:
                f.write(f"oom_kill {n + 1}\\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return x + self.alpha * y * scale
'''


@pytest.mark.parametrize("killed", [True, False], ids=["killer", "allocator"])
@pytest.mark.parametrize("last_attempt", [False, True])
def test_on_the_last_attempt_a_shape_too_large_for_the_candidate_refuses_its_probes(
        tmp_path, warm_servers, counter, killed, last_attempt):
    row = _played(counter, False, where="False")  # a reference that always fits
    row["candidate_code"] = CANDIDATE_SHORT_OF_MEMORY.replace(
        "@COUNTER@", repr(str(counter))).replace("@KILLED@", repr(killed))
    out = _verify(tmp_path, warm_servers, row, last_attempt=last_attempt)
    assert (int(counter.read_text().split()[-1]) > 4) == killed
    if not last_attempt:  # the machine's limit at that moment: run it again alone
        assert out["out_of_memory"] is True, out["message"]
        if killed:
            assert out["status"] == "out_of_memory", out["message"]
        else:  # the probes left are not run: the kernel runs again in any case
            assert "probing stopped: a call ran out of this machine's memory" in out["message"]
        return
    # alone, beside the reference only: those shapes are refused, never the kernel's defect
    _judged_with_those_shapes_refused(out, "CMP-01", candidate=True)
    if not killed:  # the call's own words are kept, and are not the trusted side running short
        assert "CUDA out of memory" in next(
            v["reason"] for v in out["verdicts"] if v["gate"] == "CMP-01")


CANDIDATE_LOAD_SHORT_OF_MEMORY = '''
import torch
import torch.nn as nn

ROWS = 4
COLS = 8


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        if ROWS * COLS != 32:  # its workspace, sized by the shape, is more than this machine has
            raise MemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")
        self.alpha = alpha

    def forward(self, x, y, scale):
        return x + self.alpha * y * scale
'''


@pytest.mark.parametrize("last_attempt", [False, True])
def test_a_candidate_that_cannot_load_for_memory_at_a_shape_is_not_shape_specialised(
        tmp_path, warm_servers, counter, last_attempt):
    row = _played(counter, False, where="False")
    row["candidate_code"] = CANDIDATE_LOAD_SHORT_OF_MEMORY
    out = _verify(tmp_path, warm_servers, row, last_attempt=last_attempt)
    if not last_attempt:  # run again alone: these verdicts are not the ones recorded
        assert out["out_of_memory"] is True, out["message"]
        assert "probing stopped: a call ran out of this machine's memory" in out["message"]
        return
    assert "does not load at this shape" not in json.dumps(out["verdicts"])
    _judged_with_those_shapes_refused(out, "CMP-01", candidate=True)
    assert "CUDA out of memory" in next(
        v["reason"] for v in out["verdicts"] if v["gate"] == "CMP-01")
