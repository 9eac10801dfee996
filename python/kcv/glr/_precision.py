"""The precision grade of the chunk ops (docs/glr/precision-contract.md) and which kernels a call
runs under it.

Every chunk op takes `precision`: "fp32" or "bf16", or None for the process-wide default that
set_precision() sets (initially "fp32"). The grade a call resolves to travels into the custom ops
as a static string argument, so torch.compile specialises on it and a CUDA graph holds the kernels
it chose; nothing inside the ops reads the default.

  "fp32"  the fp32 grade: the CUDA-core kernels on CUDA (no operand rounded).
  "bf16"  the bf16 grade, fla's precision class: the tensor-core kernels of glr/dev where they
          take the call (chunk_path), else the CUDA-core kernels, whose fp32-grade error also
          lies within the bf16 grade's looser bound.

On the CPU both grades run the fp64 chunked reference, which meets both bounds; the grade changes
nothing there. The decode ops (fused_recurrent_*) have no grade.
"""

from __future__ import annotations

import torch

from kcv.glr._native import DELTANET, GDN, GLA, KDA, LA, SSD
from kcv.glr._validate import check_choice

#: The grades a chunk op takes.
GRADES = ("fp32", "bf16")
#: Members the tensor-core kernels implement (all six).
TENSOR_CORE_MEMBERS = frozenset((LA, SSD, DELTANET, GDN, GLA, KDA))
#: The head dims they take (K = V = 128, no padding).
TENSOR_CORE_HEAD_DIM = 128

#: Kernel paths of chunk_path.
REFERENCE, CUDA_CORE, TENSOR_CORE = "reference", "cuda_core", "tensor_core"

_default = "fp32"


def check_grade(precision, name="precision"):
    """The grade named by `precision` (a str in GRADES); ValueError naming the allowed values."""
    return check_choice(name, precision, GRADES)


def set_precision(precision: str) -> str:
    """Sets the process-wide grade of chunk ops called without `precision` (fla's layers call the
    ops without it); returns the previous one. The default is "fp32"."""
    global _default
    previous, _default = _default, check_grade(precision)
    return previous


def get_precision() -> str:
    """The process-wide grade of chunk ops called without `precision`."""
    return _default


def resolve(precision):
    """The grade of one call: `precision`, or the process-wide default when it is None."""
    return _default if precision is None else check_grade(precision)


def chunk_path(member, K, V, q_dtype, beta_dtype, device_type, grade):
    """Which kernels a chunk op's call runs (forward and backward alike), from what the call's
    arguments say about themselves: REFERENCE (the fp64 chunked reference, on the CPU), TENSOR_CORE
    (glr/dev's kernels: grade "bf16", any member, K = V = 128, bf16
    q/k/v and β absent or bf16, on CUDA) or CUDA_CORE (every other CUDA call). fp32 β is not
    rounded to bf16 for the tensor-core kernels: that rounding is not one the bf16 grade
    declares."""
    check_grade(grade, "grade")
    if device_type != "cuda":
        return REFERENCE
    if (grade == "bf16" and member in TENSOR_CORE_MEMBERS and K == TENSOR_CORE_HEAD_DIM
            and V == TENSOR_CORE_HEAD_DIM and q_dtype == torch.bfloat16
            and beta_dtype in (None, torch.bfloat16)):
        return TENSOR_CORE
    return CUDA_CORE
