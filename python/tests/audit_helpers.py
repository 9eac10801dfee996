"""Shared helpers of the test_audit*.py files: where the sample corpus is, and how to run
`python -m kcv.audit` in a subprocess that imports the same kcv as the tests."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "examples", "kernelbench", "sample.jsonl")
CORPORA = os.path.join(os.path.dirname(REPO), "shared", "corpora")


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env.pop("TRITON_INTERPRET", None)
    return env


def audit_command(*args) -> list:
    return [sys.executable, "-m", "kcv.audit", *args]


def run_audit(*args, timeout=1200) -> subprocess.CompletedProcess:
    return subprocess.run(audit_command(*args), env=child_env(), capture_output=True, text=True,
                          timeout=timeout)


def processes_mentioning(text: str, env_marker: str | None = None) -> list[str]:
    """'pid: command line' of every live process (zombies aside) whose command line contains
    `text` or whose environment holds `env_marker` (NAME=VALUE): the processes a run left
    behind, also those reparented to init and the sandboxed ones, whose environment is cleared
    but whose command line names the run's cache directory."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            environ = b""
            if env_marker is not None:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if text in cmdline or (env_marker is not None
                               and env_marker.encode() in environ.split(b"\0")):
            found.append(f"{entry}: {cmdline[:300]}")
    return found
