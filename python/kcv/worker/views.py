"""Torch tensors over a call's shared file, one per tensor description of the request.

A description is the raw region (absolute byte range in the file) plus a view over it: dtype,
shape, strides in elements, and the byte offset of element 0 from the region's start
(docs/06_worker_protocol.md §3). The view is checked to stay inside its raw region before it is
made, exactly as the C++ worker does, so a malformed request is an error reply, never a stray
read. Negative strides are refused (torch cannot express them; kcv never sends them).
"""

import torch

DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i32": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
}
_NAMES = {v: k for k, v in DTYPES.items()}


def dtype_name(dtype: torch.dtype) -> str:
    """The protocol's name of a torch dtype; others get torch's own name (e.g. "uint8")."""
    return _NAMES.get(dtype, str(dtype).replace("torch.", ""))


def describe(t: torch.Tensor) -> str:
    """`f32 [4, 8]`: how messages name a tensor's dtype and shape."""
    return f"{dtype_name(t.dtype)} {list(t.shape)}"


def _ints(desc: dict, key: str, name: str) -> list:
    value = desc.get(key)
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                              for v in value):
        raise ValueError(f"{name}.{key}: not a list of integers")
    return value


def make_view(base: torch.Tensor, desc: dict) -> torch.Tensor:
    """The tensor `desc` describes, aliasing `base` (a uint8 tensor over the whole file)."""
    if not isinstance(desc, dict):
        raise ValueError("a tensor description is not a JSON object")
    name = desc.get("name") if isinstance(desc.get("name"), str) else "tensor"
    dtype = DTYPES.get(desc.get("dtype"))
    if dtype is None:
        raise ValueError(f"{name}.dtype: {desc.get('dtype')!r} is not one of {sorted(DTYPES)}")
    shape, strides, raw = (_ints(desc, k, name) for k in ("shape", "strides", "raw"))
    offset = desc.get("offset")
    if not isinstance(offset, int) or offset < 0:
        raise ValueError(f"{name}.offset: not a non-negative integer")
    if len(strides) != len(shape):
        raise ValueError(f"{name}.strides: rank {len(strides)} differs from the shape's "
                         f"{len(shape)}")
    if any(s < 0 for s in strides) or any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative shape or stride")
    if len(raw) != 2 or not 0 <= raw[0] <= raw[1] <= base.numel():
        raise ValueError(f"{name}.raw: not a byte range inside the shared file")
    size = torch.empty(0, dtype=dtype).element_size()
    begin = raw[0] + offset
    if begin % size != 0:
        raise ValueError(f"{name}.offset: element 0 is not aligned to {size} bytes")
    empty = any(d == 0 for d in shape)
    reach = sum((d - 1) * s for d, s in zip(shape, strides)) if not empty else -1
    if not empty and offset + (reach + 1) * size > raw[1] - raw[0]:
        raise ValueError(f"{name}: the view reaches outside its raw region")
    count = max(reach + 1, 0)
    flat = base[begin : begin + count * size].view(dtype)
    return flat.as_strided(shape, strides)
