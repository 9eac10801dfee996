"""How the worker words a failure: the exception's type and the first line of its message, and whether it came
from building native code (torch.utils.cpp_extension, ninja, nvcc, Triton's compiler).

Load failures are error replies whose message starts with a class the orchestrator maps to the
store's kernel statuses: "import_error:", "compile_error:", "init_error:", "problem_error:" or
"bad_request:". The full traceback always goes to stderr, whose tail kcv quotes.
"""

import os
import subprocess
import sys
import traceback

_BUILD_FILES = ("torch/utils/cpp_extension.py", "/triton/compiler/", "/triton/runtime/build.py")
# Code that starts CUDA or builds for it: torch.cuda's lazy initialisation (also reached from a
# tensor made on "cuda"), torch's extension builder (its CUDA home lookup and its builds), and
# Triton's driver and NVIDIA backend.
_CUDA_START_FILES = ("/torch/cuda/", "torch/utils/cpp_extension.py", "/triton/runtime/driver.py",
                     "/triton/backends/nvidia/")

# A failure's cause, sent as the reply's "cause" field (docs/06 §7.1), decided here from the
# exception object, never from its text.
CUDA_UNAVAILABLE = "cuda_unavailable"  # it needs a CUDA device this process cannot see
OUT_OF_MEMORY = "out_of_memory"        # MemoryError, torch.OutOfMemoryError
_BUILD_TOOLS = ("ninja", "nvcc", "c++", "g++", "gcc", "clang")


class LoadError(Exception):
    """A load that failed; str() is the whole reply message, class prefix included."""


class RequestError(Exception):
    """A request kcv should not have sent (wrong input count, a malformed task): an error reply."""


def summary_line(exc: BaseException) -> str:
    """`ValueError: bad shape`: the line of the exception's traceback that names its type, which
    holds the first line of its message. torch's CUDA errors put the cause there ("CUDA error:
    out of memory") and debugging advice on the lines after it; a SyntaxError's source lines come
    before it."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    name = type(exc).__name__
    for line in text:
        if line.split(":", 1)[0].rsplit(".", 1)[-1] == name:  # "torch.AcceleratorError: ..."
            return line.strip()
    return text[-1].strip() if text else name


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def from_build(exc: BaseException) -> bool:
    """True when the exception (or one it was raised from) comes from a native build step."""
    for e in _chain(exc):
        if isinstance(e, subprocess.CalledProcessError):
            cmd = e.cmd if isinstance(e.cmd, str) else " ".join(map(str, e.cmd or []))
            if any(tool in cmd for tool in _BUILD_TOOLS):
                return True
        if type(e).__name__ == "CompilationError" and "triton" in type(e).__module__:
            return True
        tb = e.__traceback__
        while tb is not None:
            if any(f in tb.tb_frame.f_code.co_filename for f in _BUILD_FILES):
                return True
            tb = tb.tb_next
    return False


def _frames(exc: BaseException):
    tb = exc.__traceback__
    while tb is not None:
        yield tb.tb_frame.f_code.co_filename
        tb = tb.tb_next


def cuda_visible() -> bool:
    """Whether this process can see a CUDA device: torch's answer once torch is imported, else
    whether the driver's device node exists and CUDA_VISIBLE_DEVICES does not hide every GPU."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return bool(torch.cuda.is_available())
        except Exception:  # noqa: BLE001 - a broken driver: no usable device
            return False
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl")


_CUDA_ERROR_MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation


def _cuda_error_code(exc: BaseException) -> int | None:
    """The CUDA runtime's error code of a torch.AcceleratorError (a failed launch or
    synchronisation: "CUDA error: out of memory" is code 2), else None."""
    if type(exc).__name__ != "AcceleratorError":
        return None
    code = getattr(exc, "error_code", None)
    return code if isinstance(code, int) else None


def cause_of(exc: BaseException, *, cuda_visible: bool) -> str | None:
    """OUT_OF_MEMORY when the exception (or one it was raised from) is an out-of-memory error
    (MemoryError, torch.OutOfMemoryError, a CUDA error with code cudaErrorMemoryAllocation);
    CUDA_UNAVAILABLE when this process sees no CUDA device and one of them was raised inside the
    code that starts CUDA (_CUDA_START_FILES); else None."""
    chain = list(_chain(exc))
    if any(isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
           or _cuda_error_code(e) == _CUDA_ERROR_MEMORY_ALLOCATION for e in chain):
        return OUT_OF_MEMORY
    if not cuda_visible and any(f in path for e in chain for path in _frames(e)
                                for f in _CUDA_START_FILES):
        return CUDA_UNAVAILABLE
    return None


def report(exc: BaseException, where: str) -> None:
    """Prints the full traceback to stderr under a heading that says where it happened."""
    print(f"kcv.worker: {where}:", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


def load_error(exc: BaseException, klass: str, what: str, *,
               no_gpu: bool | None = None) -> LoadError:
    """The LoadError for `exc` raised while doing `what` (e.g. "candidate_code");
    `klass` is used unless the exception comes from a native build (then compile_error). Its
    `cause` (cause_of; a native build without a GPU is CUDA_UNAVAILABLE) goes into the reply.
    `no_gpu`: whether this process sees no CUDA device (default: not cuda_visible())."""
    report(exc, f"{klass} in {what}")
    detail = summary_line(exc)
    if no_gpu is None:
        no_gpu = not cuda_visible()
    cause = cause_of(exc, cuda_visible=not no_gpu)
    if from_build(exc):
        klass = "compile_error"
        if no_gpu:
            detail = f"native build without a GPU (no CUDA device visible): {detail}"
            cause = cause or CUDA_UNAVAILABLE
    err = LoadError(f"{klass}: {what}: {detail}")
    err.cause = cause
    return err
