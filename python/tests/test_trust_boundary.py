"""The package is laid out by trust: kcv.worker is the only code that loads or runs reference and
candidate code, and nothing on the trusted side (kcv.audit, kcv.verify, kcv.testing, kcv.glr)
imports it, neither in its source nor at run time."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

KCV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kcv")


def trusted_sources():
    for root, _dirs, files in os.walk(KCV):
        if os.path.relpath(root, KCV).split(os.sep)[0] == "worker":
            continue
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(root, name)


def imported_modules(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def test_no_trusted_source_imports_the_worker():
    offenders = [(os.path.relpath(p, KCV), m) for p in trusted_sources()
                 for m in imported_modules(p) if m == "kcv.worker" or m.startswith("kcv.worker.")]
    assert list(trusted_sources()), "no trusted sources found"
    assert offenders == []


def test_importing_the_trusted_side_loads_no_worker_module():
    code = ("import sys, kcv.audit, kcv.audit.kernel, kcv.verify, kcv.testing\n"
            "print(sorted(m for m in sys.modules if m.startswith('kcv.worker')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ.copy(), check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
