"""Kernel statuses of the audit store (docs/07) and how failures map onto them.

A misbehaving kernel is data: every failure becomes one final status with a message, and the
audit goes on. The worker prefixes its load errors with the step that failed ("import_error: ",
"compile_error: "); the executor's own messages name crashes ("died of signal") and timeouts
("no result within", "did not answer"). Anything else is `error` with the message."""

from __future__ import annotations

import re

FINAL = ("ok", "crash", "timeout", "compile_error", "import_error", "malformed", "error")

# The worker's load-error classes (kcv/worker/errors.py) and the status each maps to.
_CLASSES = {
    "import_error": "import_error",
    "compile_error": "compile_error",
    "init_error": "error",
    "problem_error": "error",
    "bad_request": "error",
}
_CLASS_RE = re.compile(r"\b(" + "|".join(_CLASSES) + r"):")
# Patterns, most specific first; matched case-insensitively anywhere in a message.
_PATTERNS = (
    (r"\bimport_error\b", "import_error"),
    (r"\bcompile_error\b", "compile_error"),
    (r"error building extension|ninja: build stopped|compilationerror|nvcc fatal|"
     r"compilation terminated", "compile_error"),
    (r"syntaxerror|indentationerror|modulenotfounderror|importerror", "import_error"),
    (r"no result within|timed out|timeout", "timeout"),
    (r"died of signal|exited with exit code", "crash"),
)
# CUBLAS_STATUS_ALLOC_FAILED: cublasCreate() could not get its workspace, seen on the H200 in a
# reference load while 32 slots shared two GPUs (docs/audit/README.md).
_OOM = re.compile(r"out of memory|outofmemoryerror|cuda error: out of memory|"
                  r"cudaerrormemoryallocation|cublas_status_alloc_failed", re.IGNORECASE)


def status_of_load_error(message: str) -> str:
    """The audit status of a worker start/load failure, from its message."""
    text = message.strip()
    m = _CLASS_RE.search(text)
    if m:
        return _CLASSES[m.group(1)]
    for pattern, status in _PATTERNS:
        if re.search(pattern, text, re.IGNORECASE):
            return status
    return "error"


def is_out_of_memory(message: str) -> bool:
    """A CUDA (or host) out-of-memory message: the kernel is retried alone once."""
    return bool(_OOM.search(message or ""))


def call_status_to_kernel(status: str) -> str | None:
    """The kernel status a candidate call's status forces (None: the call does not end it)."""
    return {"crash": "crash", "timeout": "timeout"}.get(status)
