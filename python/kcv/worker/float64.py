"""Running a reference Model in float64 when its code makes float32 tensors of its own.

`.double()` converts parameters and buffers only. KernelBench models also hold tensors as plain
attributes (`self.h0 = torch.randn(...)` in __init__) or make them in forward (`h0 =
torch.randn(...)`); left at float32 they meet float64 inputs and an LSTM/GRU refuses ("Input and
hidden tensors are not the same dtype"). So:
- promote_attributes() converts the floating tensors a module's submodules hold in their
  __dict__ (directly, or in a list/tuple there) to float64 once, after the model is built;
- float64_forward() runs a forward with float64 as the default dtype (factories without a
  dtype, Python-scalar promotion), restored afterwards.
The model itself is still BUILT with float32 as the default: parameter init draws (kaiming on a
default-dtype empty tensor) and plain `torch.randn` attributes must be the very numbers of the
float32 model and the candidate, and the CPU and CUDA generators give different numbers for the
same seed in float64 than in float32. For the same reason random draws inside forward (rand,
randn, normal with a size, rand_like/randn_like of a float64 tensor) are taken in float32 and
then widened: the float64 reference sees the random values the candidate's float32 run sees.
"""

import contextlib

import torch
from torch.overrides import TorchFunctionMode

_DRAWS = {torch.rand, torch.randn, torch.normal}
_DRAWS_LIKE = {torch.rand_like, torch.randn_like}


def _widen(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point() \
            and value.dtype != torch.float64:
        return value.to(torch.float64)
    return value


def promote_attributes(model: torch.nn.Module) -> int:
    """Converts floating tensors held as plain attributes of `model`'s modules (or in a list or
    tuple attribute) to float64; returns how many it converted."""
    count = 0
    for module in model.modules():
        for key, value in list(vars(module).items()):  # parameters/buffers live elsewhere
            if type(value) in (list, tuple):  # plain ones: a namedtuple is left alone
                items = [_widen(v) for v in value]
                changed = sum(a is not b for a, b in zip(items, value))
                if changed:
                    object.__setattr__(module, key, type(value)(items))
                    count += changed
                continue
            widened = _widen(value)
            if widened is not value:
                object.__setattr__(module, key, widened)
                count += 1
    return count


class _Float32Draws(TorchFunctionMode):
    """Random factories without a dtype draw in float32 and are widened to float64."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("dtype") is None:
            if func in _DRAWS and not any(isinstance(a, torch.Tensor) for a in args):
                kwargs["dtype"] = torch.float32
                return func(*args, **kwargs).to(torch.float64)
            if func in _DRAWS_LIKE and args and isinstance(args[0], torch.Tensor) \
                    and args[0].dtype == torch.float64:
                kwargs["dtype"] = torch.float32
                return func(*args, **kwargs).to(torch.float64)
        return func(*args, **kwargs)


@contextlib.contextmanager
def float64_forward():
    """float64 as the default dtype, random draws as float32 widened; both undone on exit."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with _Float32Draws():
            yield
    finally:
        torch.set_default_dtype(before)
