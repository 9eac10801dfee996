"""How the worker words and classifies an exception (kcv/worker/errors.py): the summary line keeps
the line that names the exception's type, where torch puts a CUDA error's cause, not the advice
that follows it; a CUDA error whose code is cudaErrorMemoryAllocation is out of memory by its
code, as MemoryError and torch.OutOfMemoryError are by their types."""

import pytest

from kcv.worker.errors import OUT_OF_MEMORY, cause_of, summary_line

# torch's message for a failed launch, as an AcceleratorError carries it (the cause first, the
# debugging advice after it).
CUDA_OOM = ("CUDA error: out of memory\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


class AcceleratorError(RuntimeError):
    """Stands in for torch.AcceleratorError where torch is not installed (same name, same
    error_code attribute)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.error_code = code


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as e:  # noqa: BLE001
        return e


def test_the_summary_keeps_the_cause_of_a_multi_line_message():
    e = raised(AcceleratorError(CUDA_OOM, 2))
    assert summary_line(e).endswith("AcceleratorError: CUDA error: out of memory"), summary_line(e)
    assert summary_line(raised(ValueError("bad shape"))) == "ValueError: bad shape"
    assert summary_line(raised(KeyError("x"))) == "KeyError: 'x'"
    assert summary_line(raised(RuntimeError())) == "RuntimeError"


def test_a_syntax_error_is_summed_up_by_its_type_line():
    try:
        compile("x = (\n", "<candidate>", "exec")
    except SyntaxError as e:
        line = summary_line(e)
    assert line.startswith("SyntaxError: "), line


def test_a_cuda_allocation_failure_is_out_of_memory_by_its_code():
    assert cause_of(raised(AcceleratorError(CUDA_OOM, 2)), cuda_visible=True) == OUT_OF_MEMORY
    # The same words with another code (an illegal address, 700) are the kernel's error.
    assert cause_of(raised(AcceleratorError(CUDA_OOM, 700)), cuda_visible=True) is None
    assert cause_of(raised(RuntimeError(CUDA_OOM)), cuda_visible=True) is None
    assert cause_of(raised(MemoryError()), cuda_visible=True) == OUT_OF_MEMORY
    try:
        try:
            raise AcceleratorError(CUDA_OOM, 2)
        except AcceleratorError as inner:
            raise RuntimeError("the candidate wrapped it") from inner
    except RuntimeError as outer:
        assert cause_of(outer, cuda_visible=True) == OUT_OF_MEMORY


def test_torch_accelerator_error_carries_the_code_attribute():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "AcceleratorError"):
        pytest.skip("this torch has no AcceleratorError")
    e = torch.AcceleratorError(CUDA_OOM)
    e.error_code = 2  # what torch sets from c10::AcceleratorError::get_error_code()
    assert cause_of(raised(e), cuda_visible=True) == OUT_OF_MEMORY
    assert summary_line(raised(e)) == "torch.AcceleratorError: CUDA error: out of memory"
