"""What a model returned, checked against the call's output views and copied into them.

A result is a tensor or a (nested) tuple/list of tensors, flattened in order. Anything else is a
bad_output whose message names what came back. The candidate must match each view's dtype and
shape exactly; trusted producers (the reference64/reference32 tasks) may be converted to
the view's dtype (`convert=True`) but never reshaped. Tensor subclasses are stripped to plain
tensors before the copy so a subclass cannot intercept it (lazy outputs, hack class 3).
"""

import torch

from kcv.worker.views import describe


class BadOutput(Exception):
    """The model's result does not fit the call's outputs; the message says how."""


def flatten(result) -> list:
    """The tensors of `result` in order; BadOutput names the first thing that is not one."""
    if isinstance(result, torch.Tensor):
        return [result]
    if not isinstance(result, (tuple, list)):
        raise BadOutput(f"the model returned {type(result).__name__}, not a tensor or a tuple "
                        "of tensors")
    flat = []
    for item in result:
        if isinstance(item, (tuple, list)):
            flat.extend(flatten(item))
        elif isinstance(item, torch.Tensor):
            flat.append(item)
        else:
            raise BadOutput(f"output {len(flat)} is {type(item).__name__}, not a tensor")
    return flat


def store(result, views: list, *, convert: bool) -> None:
    """Copies the flattened `result` into `views` (the call's output views)."""
    tensors = flatten(result)
    if len(tensors) != len(views):
        raise BadOutput(f"expected {len(views)} output tensor(s), got {len(tensors)}")
    plain = [t if type(t) is torch.Tensor else t.as_subclass(torch.Tensor) for t in tensors]
    for k, (got, view) in enumerate(zip(plain, views)):
        if tuple(got.shape) != tuple(view.shape) or (not convert and got.dtype != view.dtype):
            raise BadOutput(f"output.{k}: expected {describe(view)}, got {describe(got)}")
        if got.is_complex():
            raise BadOutput(f"output.{k}: complex results are not supported ({got.dtype})")
    for got, view in zip(plain, views):
        view.copy_(got.detach())
