"""Fixtures shared by the test modules here. Audit stores made by the tests (and by the
`kcv audit` processes they start, which inherit the environment) keep their keys in a scratch
directory, never in the user's ~/.config, unless KCV_KEY_DIR already names one. The
out-of-memory killer's counts kcv reads (KCV_OOM_COUNTERS, src/worker/oom_kills.hpp) are a
scratch file that only test_audit_oom_killed.py raises: a kill elsewhere on the host while a test
runs cannot turn its worker's SIGKILL into `out_of_memory`."""

import os
import tempfile

import pytest

if not os.environ.get("KCV_KEY_DIR"):
    os.environ["KCV_KEY_DIR"] = tempfile.mkdtemp(prefix="kcv-test-keys-")
if not os.environ.get("KCV_OOM_COUNTERS"):
    _counts = os.path.join(tempfile.mkdtemp(prefix="kcv-test-oom-"), "vmstat")
    with open(_counts, "w", encoding="utf-8") as _f:
        _f.write("oom_kill 0\n")
    os.environ["KCV_OOM_COUNTERS"] = _counts


@pytest.fixture(scope="module")
def worker():
    """One Python worker (`python -m kcv.worker`, driven by worker_client.py) per test module,
    greeted, and closed after the module; each test loads what it needs."""
    from worker_client import WorkerClient  # imports torch: only modules that use a worker

    c = WorkerClient()
    hello = c.hello()
    assert hello["type"] == "hello", hello
    yield c
    c.close()


@pytest.fixture(scope="module")
def warm_servers():
    """Warm parents of the workers (kcv.audit.forkservers), one set per test module, as the audit
    keeps them: a cold worker spends seconds importing torch. `warm_servers.command(role, None)`
    is a worker's argv (role "reference" or "candidate")."""
    from kcv.audit.forkservers import ForkServers

    servers = ForkServers([None], threads=1)
    try:
        assert not servers.wait_ready(300), "the warm parents did not start"
        yield servers
    finally:
        servers.close()
