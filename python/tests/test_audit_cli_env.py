"""`kcv audit` execs the Python orchestrator with malloc's huge-page tunable set (src/cli/
cmd_audit.cpp), unless the caller set GLIBC_TUNABLES, whose value then stays as it is. A stand-in
interpreter (KCV_PYTHON) reports the environment and arguments it was started with. Needs the kcv
program (CTest passes it as KCV_TEST_CLI)."""

import os
import subprocess

import pytest


@pytest.fixture
def run_audit(tmp_path):
    cli = os.environ.get("KCV_TEST_CLI")
    if not cli:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s|%s\\n" "${GLIBC_TUNABLES-unset}" "$*"\n')
    fake.chmod(0o755)

    def run(**env_changes):
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        env.update(env_changes, KCV_PYTHON=str(fake))
        out = subprocess.run([cli, "audit", "corpus.jsonl", "--jobs", "2"], env=env,
                             capture_output=True, text=True, timeout=60, check=True)
        return out.stdout.strip()

    return run


def test_the_orchestrator_starts_with_huge_pages_advised(run_audit):
    assert run_audit() == "glibc.malloc.hugetlb=1|-m kcv.audit corpus.jsonl --jobs 2"


def test_a_callers_tunables_are_kept(run_audit):
    assert run_audit(GLIBC_TUNABLES="glibc.malloc.arena_max=2") == (
        "glibc.malloc.arena_max=2|-m kcv.audit corpus.jsonl --jobs 2")
    assert run_audit(GLIBC_TUNABLES="") == "|-m kcv.audit corpus.jsonl --jobs 2"
