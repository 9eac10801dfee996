"""malloc's huge-page tunable lives in one place, the audit's Python entry (python/kcv/audit/
__main__.py): `python -m kcv.audit` re-execs itself with GLIBC_TUNABLES=glibc.malloc.hugetlb=1
unless the caller set GLIBC_TUNABLES, whose value (even empty) then stays as it is, without a
re-exec. A sitecustomize.py in front of PYTHONPATH records GLIBC_TUNABLES and the command line at
every interpreter start, so the record has one line per process start. `kcv audit` execs the entry
with the same arguments and sets no tunable itself: a stand-in interpreter (KCV_PYTHON) reports
the environment and arguments it was started with; that test needs the kcv program (CTest passes
it as KCV_TEST_CLI)."""

import os
import subprocess
import sys

import pytest

# Runs at every interpreter start that has its directory on PYTHONPATH. PYTHONPATH comes before
# site-packages and the standard library on sys.path, so this one shadows any sitecustomize of the
# venv or the distribution (Debian's sits in the standard library's directory).
SITECUSTOMIZE = '''\
import os, sys
with open(os.environ["KCV_TEST_TUNABLES_LOG"], "a", encoding="utf-8") as f:
    f.write(os.environ.get("GLIBC_TUNABLES", "unset") + "|" + " ".join(sys.orig_argv[1:]) + "\\n")
'''


@pytest.fixture
def run_entry(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "starts.log"

    def run(**env_changes):
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        env.update(env_changes, KCV_TEST_TUNABLES_LOG=str(log), PYTHONPATH=path)
        log.unlink(missing_ok=True)
        # -u: an interpreter flag the re-exec must keep; --help: the entry's own answer, no GPU
        out = subprocess.run([sys.executable, "-u", "-m", "kcv.audit", "--help"], env=env,
                             capture_output=True, text=True, timeout=60, check=True)
        assert out.stdout.startswith("usage: kcv audit"), out.stdout + out.stderr
        return log.read_text(encoding="utf-8").splitlines()

    return run


def test_the_entry_reexecs_itself_with_huge_pages_advised(run_entry):
    assert run_entry() == ["unset|-u -m kcv.audit --help",
                           "glibc.malloc.hugetlb=1|-u -m kcv.audit --help"]


def test_a_callers_tunables_are_kept_without_a_reexec(run_entry):
    assert run_entry(GLIBC_TUNABLES="glibc.malloc.arena_max=2") == [
        "glibc.malloc.arena_max=2|-u -m kcv.audit --help"]
    assert run_entry(GLIBC_TUNABLES="") == ["|-u -m kcv.audit --help"]  # empty: turned off


def test_kcv_audit_execs_the_entry_and_sets_no_tunable(tmp_path):
    cli = os.environ.get("KCV_TEST_CLI")
    if not cli:
        pytest.skip("KCV_TEST_CLI (the kcv program) is set by CTest")
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s|%s\\n" "${GLIBC_TUNABLES-unset}" "$*"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env["KCV_PYTHON"] = str(fake)
    out = subprocess.run([cli, "audit", "corpus.jsonl", "--jobs", "2"], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "unset|-m kcv.audit corpus.jsonl --jobs 2"
