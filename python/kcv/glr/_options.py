"""The keyword arguments fla 0.6 takes through **kwargs, handled the same way by every op.

  chunk_size              checked against the op's allowed set; the CPU reference runs with it
                          (any multiple of 16), the CUDA kernels always use 64 (the same result
                          up to rounding)
  transpose_state_layout  fla's deprecated name of state_v_first; giving both is a ValueError
  chunk_indices           accepted and unused (kcv derives its own index from cu_seqlens)
  head_first              removed in fla 0.5: ValueError
  anything else           TypeError naming it
"""

from __future__ import annotations

import warnings

#: Chunk sizes the CPU reference runs with; other sizes fla allows fall back to 64.
_REFERENCE_CHUNKS = (16, 32, 64, 128, 256)


def state_layout(state_v_first, kwargs, stacklevel=3):
    """state_v_first, honouring fla's deprecated transpose_state_layout."""
    if "transpose_state_layout" not in kwargs:
        return bool(state_v_first)
    if state_v_first:
        raise ValueError("transpose_state_layout: cannot pass both state_v_first and the "
                         "deprecated transpose_state_layout")
    warnings.warn("transpose_state_layout is deprecated and renamed to state_v_first",
                  DeprecationWarning, stacklevel=stacklevel)
    return bool(kwargs.pop("transpose_state_layout"))


def chunk_size(kwargs, allowed):
    """The chunk size to run with. `allowed` is a set, or "pow2" (chunk_simple_gla)."""
    size = kwargs.pop("chunk_size", None)
    if size is None:
        return 64
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"chunk_size: expected an int, got {type(size).__name__}")
    ok = (size > 0 and size & (size - 1) == 0) if allowed == "pow2" else size in allowed
    if not ok:
        want = "a power of 2" if allowed == "pow2" else f"one of {sorted(allowed)}"
        raise ValueError(f"chunk_size: expected {want}, got {size}")
    return size if size in _REFERENCE_CHUNKS else 64


def decode_options(state_v_first, kwargs):
    """The keyword options of the decode (fused_recurrent_*) ops: (state_v_first,
    cu_seqlens_cpu); the rest as finish() has it."""
    state_v_first = state_layout(state_v_first, kwargs, stacklevel=4)
    cu_seqlens_cpu = kwargs.pop("cu_seqlens_cpu", None)
    finish(kwargs)
    return state_v_first, cu_seqlens_cpu


def finish(kwargs):
    """Drops what kcv accepts and ignores, rejects the rest."""
    kwargs.pop("chunk_indices", None)
    if "head_first" in kwargs:
        raise ValueError("head_first: removed in fla v0.5; use the [B, T, H, D] layout")
    if kwargs:
        raise TypeError(f"{next(iter(kwargs))}: unexpected keyword argument")


def refuse(name, value, default=None):
    """NotImplementedError for an fla option kcv does not implement by design."""
    if value is not default and value != default:
        raise NotImplementedError(f"{name}: only {default!r} is supported by kcv.glr")
