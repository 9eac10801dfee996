"""The native layer kcv._glr as the ops see it: member codes, the head-dimension limits of each
path, and numpy/pointer conversions. Nothing here checks arguments (that is _validate.py)."""

from __future__ import annotations

import torch

from kcv import _glr

# Member codes of kcv::glr::Member (include/kcv/glr/member.hpp).
LA, SSD, GLA, DELTANET, GDN, KDA = range(6)
GATE = {LA: None, SSD: "scalar", GLA: "channel", DELTANET: None, GDN: "scalar", KDA: "channel"}
DELTA = {LA: False, SSD: False, GLA: False, DELTANET: True, GDN: True, KDA: True}

#: K and V the CUDA chunk kernels take (1..128).
MAX_HEAD_DIM = int(_glr.MAX_HEAD_DIM)
#: K and V the CUDA decode kernel takes (1..256).
MAX_DECODE_HEAD_DIM = int(_glr.MAX_DECODE_HEAD_DIM)
#: K and V the CPU (fp64) paths take; fla's own limit is K <= 256.
MAX_CPU_HEAD_DIM = 256


#: Read once at import, so that has_cuda() is a constant torch.compile can trace.
HAS_CUDA = bool(_glr.has_cuda())


def has_cuda() -> bool:
    """True when kcv._glr was built with the sm_90a kernels."""
    return HAS_CUDA


def np64(t):
    """A tensor as the flat float64 numpy array kcv._glr's host paths take (None stays None)."""
    return None if t is None else t.detach().to(torch.float64).contiguous().reshape(-1).numpy()


def from_np(a, shape, dtype, device):
    return torch.from_numpy(a).reshape(shape).to(device=device, dtype=dtype)


def ptr(t):
    return 0 if t is None else t.data_ptr()
