"""Fixtures shared by the test modules here."""

import pytest


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
