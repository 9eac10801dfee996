"""Argument checks shared by every op. Each error names the argument: ValueError for a bad value
or shape, TypeError for a bad type or dtype. Limits of the CUDA kernels (what they cannot do by
design) raise NotImplementedError, never a silently different result."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from kcv.glr._native import (DELTA, GATE, MAX_CPU_HEAD_DIM, MAX_DECODE_HEAD_DIM, MAX_HEAD_DIM)

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class Dims:
    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    N: int  # sequences: len(cu_seqlens) - 1, else B

    def gpu(self, varlen):
        """(B, T, H, HV, K, V, N) as the launchers take them (N = 0 for a plain batch)."""
        return (self.B, self.T, self.H, self.HV, self.K, self.V, self.N if varlen else 0)


def check_choice(name, value, allowed):
    """`value` if it is one of the strings `allowed`; ValueError naming them otherwise."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: expected one of {', '.join(repr(a) for a in allowed)}, got "
                         f"{value!r}")
    return value


def check_tensor(name, t, ndim):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: tensor must be contiguous (call .contiguous())")


def check_float(name, t):
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected float16, bfloat16, float32 or float64, got {t.dtype}")


def check_like(name, t, shape, device):
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, q on {device}")


def _head_dim_limit(device, decode):
    if device.type != "cuda":
        return MAX_CPU_HEAD_DIM, "the CPU reference"
    if decode:
        return MAX_DECODE_HEAD_DIM, "the CUDA decode kernel"
    return MAX_HEAD_DIM, "the CUDA chunk kernels"


def check_qkv(q, k, v, decode):
    """q, k [B, T, H, K] and v [B, T, HV, V]; returns Dims without N."""
    check_tensor("q", q, 4)
    check_tensor("k", k, 4)
    check_tensor("v", v, 4)
    B, T, H, K = q.shape
    check_like("k", k, q.shape, q.device)
    if v.shape[0] != B or v.shape[1] != T:
        raise ValueError(f"v: expected leading dims ({B}, {T}) like q, got shape {tuple(v.shape)}")
    if v.device != q.device:
        raise ValueError(f"v: on {v.device}, q on {q.device}")
    HV, V = v.shape[2], v.shape[3]
    if H == 0 or HV % H != 0:
        raise ValueError(f"v: value heads {HV} must be a positive multiple of q's heads {H} (GVA)")
    if T == 0:
        raise ValueError("q: sequence length must be positive")
    check_float("q", q)
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: dtype {t.dtype} differs from q's {q.dtype} (mixed dtypes)")
    limit, path = _head_dim_limit(q.device, decode)
    for name, dim, label in (("q", K, "K"), ("v", V, "V")):
        if dim < 1:
            raise ValueError(f"{name}: head dim {label}={dim} must be positive")
        if dim > limit:
            exc = NotImplementedError if limit < MAX_CPU_HEAD_DIM else ValueError
            raise exc(f"{name}: head dim {label}={dim} exceeds {limit}, the largest {path} take")
    if q.is_cuda and not decode and q.dtype != torch.bfloat16:
        raise NotImplementedError(
            f"q: the CUDA chunk kernels take bfloat16 q/k/v, got {q.dtype} (cast to bfloat16, "
            "or run the CPU reference)")
    return B, T, H, HV, K, V


def check_gate_beta(member, g, beta, B, T, HV, K, device):
    gate = GATE[member]
    if gate is None:
        if g is not None:
            raise ValueError("g: this op has no gate")
    else:
        if g is None:
            raise ValueError("g: required")
        check_tensor("g", g, 3 if gate == "scalar" else 4)
        check_like("g", g, (B, T, HV) if gate == "scalar" else (B, T, HV, K), device)
        check_float("g", g)
    if DELTA[member]:
        if beta is None:
            raise ValueError("beta: required")
        check_tensor("beta", beta, 3)
        check_like("beta", beta, (B, T, HV), device)
        check_float("beta", beta)


def check_cu_seqlens(cu_seqlens, cu_seqlens_cpu, B, device):
    """The checks of cu_seqlens that need no values: type, dtype, device, length and
    cu_seqlens_cpu's agreement. Returns N, the number of sequences (B without cu_seqlens)."""
    if cu_seqlens is None:
        if cu_seqlens_cpu is not None:
            raise ValueError("cu_seqlens_cpu: given without cu_seqlens")
        return B
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1:
        raise ValueError("cu_seqlens: expected a 1-D tensor of N+1 offsets")
    if cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"cu_seqlens: expected int32 or int64, got {cu_seqlens.dtype}")
    if not cu_seqlens.is_contiguous():
        raise ValueError("cu_seqlens: tensor must be contiguous (call .contiguous())")
    if cu_seqlens.device != device:
        raise ValueError(f"cu_seqlens: on {cu_seqlens.device}, q on {device}")
    if B != 1:
        raise ValueError(f"cu_seqlens: the batch size must be 1 with cu_seqlens, got {B}")
    if cu_seqlens_cpu is not None:
        if not isinstance(cu_seqlens_cpu, torch.Tensor) or cu_seqlens_cpu.device.type != "cpu":
            raise ValueError("cu_seqlens_cpu: expected a CPU tensor")
        if cu_seqlens_cpu.shape != cu_seqlens.shape:
            raise ValueError(f"cu_seqlens_cpu: shape {tuple(cu_seqlens_cpu.shape)} differs from "
                             f"cu_seqlens' {tuple(cu_seqlens.shape)}")
        if cu_seqlens_cpu.dtype not in (torch.int32, torch.int64):
            raise TypeError(
                f"cu_seqlens_cpu: expected int32 or int64, got {cu_seqlens_cpu.dtype}")
    if cu_seqlens.shape[0] < 2:
        raise ValueError("cu_seqlens: needs at least two offsets")
    return cu_seqlens.shape[0] - 1


def read_offsets(cu_seqlens, cu_seqlens_cpu, T):
    """The offsets as a list of ints (None without cu_seqlens), checked: start at 0, strictly
    increasing, end at T. They come from cu_seqlens_cpu when given; else cu_seqlens is copied to
    the host, which for a CUDA tensor waits for the device (fla does the same)."""
    if cu_seqlens is None:
        return None
    host = cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens.cpu()
    cu = [int(x) for x in host.tolist()]
    if cu[0] != 0:
        raise ValueError(f"cu_seqlens: must start at 0, got {cu[0]}")
    if any(b <= a for a, b in zip(cu, cu[1:])):
        raise ValueError("cu_seqlens: offsets must be strictly increasing (non-monotone or an "
                         "empty sequence)")
    if cu[-1] != T:
        raise ValueError(f"cu_seqlens: must end at T={T}, got {cu[-1]}")
    return cu


def check_state(initial_state, N, HV, K, V, v_first, device):
    if initial_state is None:
        return
    check_tensor("initial_state", initial_state, 4)
    check_like("initial_state", initial_state, (N, HV, V, K) if v_first else (N, HV, K, V), device)
    check_float("initial_state", initial_state)


def check_scale(scale, K):
    if scale is None:
        return K ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale: expected a float, got {type(scale).__name__}")
    scale = float(scale)
    if scale != scale or scale in (float("inf"), float("-inf")):
        raise ValueError(f"scale: must be finite, got {scale}")
    return scale


def validate(member, q, k, v, g, beta, initial_state, cu_seqlens, cu_seqlens_cpu, v_first,
             decode):
    """Checks every argument from its type, dtype, device and shape, never its values (so this
    traces under torch.compile and reads nothing back from the device); returns Dims. The offsets'
    values are checked where they are read, by read_offsets inside the op."""
    B, T, H, HV, K, V = check_qkv(q, k, v, decode)
    check_gate_beta(member, g, beta, B, T, HV, K, q.device)
    N = check_cu_seqlens(cu_seqlens, cu_seqlens_cpu, B, q.device)
    check_state(initial_state, N, HV, K, V, v_first, q.device)
    return Dims(B, T, H, HV, K, V, N)


def dims_of(q, v, cu_seqlens):
    """Dims from the shapes alone (the arguments already validated)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    N = B if cu_seqlens is None else cu_seqlens.shape[0] - 1
    return Dims(B, T, H, HV, K, V, N)
