"""Moving a call's input views to the device and back, layout included.

layout_copy() is how every trusted run (the reference's float64 and float32 tasks) gets its
inputs: a fresh tensor with the view's shape and strides (torch.empty_strided + copy_), at the
dtype the task computes in, so a model that refuses a layout (`.view()` of a padded or
transposed input) refuses it there too, as it does in the candidate's run. A broadcast view
(a stride 0 over a dim of several elements) cannot be written by copy_ (torch refuses internal
overlap), so such a view is converted span and all instead: same strides, same sharing.

On the CPU the kernel gets the views over the shared file themselves. On CUDA each input is
copied with the storage span between its first and last element, so the device tensor has the
same strides and padding as the view kcv sent (layout probes stay layout probes); after the call
the span is copied back over the view, so kcv's input-mutation check sees in-place writes on the
device too.

The copy back is unconditional, straight into the shared file's pages: comparing first would
need either a host copy (fresh pages and a one-core comparison per input per call, what this
replaced) or a pre-call copy kept in this process, which the candidate can reach (gc) and
rewrite along with its input. Whatever the candidate does to the shared file itself, kcv sees.
"""

import torch


def _span(t: torch.Tensor) -> torch.Tensor:
    """The storage between `t`'s first and last element, as a flat tensor of its dtype."""
    extent = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride()))
    return t.as_strided((extent,), (1,))


def copy_with_layout(view: torch.Tensor, device: str) -> torch.Tensor:
    """A copy of `view` on `device` (a copy even on the same device) with its strides and the
    storage between its elements kept."""
    if view.numel() == 0:
        return view.to(device, copy=True)
    return _span(view).to(device, copy=True).as_strided(view.shape, view.stride())


def _may_overlap(t: torch.Tensor) -> bool:
    """Whether two elements of `t` may share memory: some stride (of a dim of more than one
    element) does not clear what the smaller strides reach. A padded or transposed view
    does not; a broadcast one (stride 0) does."""
    reach = 0
    for stride, size in sorted((s, d) for d, s in zip(t.shape, t.stride()) if d > 1):
        if stride <= reach:
            return True
        reach += (size - 1) * stride
    return False


def layout_copy(view: torch.Tensor, device: str, dtype: torch.dtype) -> torch.Tensor:
    """A new tensor on `device` at `dtype` holding `view`'s values with `view`'s strides."""
    if view.numel() and _may_overlap(view):  # a broadcast view: convert its span
        return _span(view).to(device, dtype, copy=True).as_strided(view.shape, view.stride())
    out = torch.empty_strided(view.shape, view.stride(), dtype=dtype, device=device)
    return out.copy_(view)


def to_device(view: torch.Tensor, device: str) -> torch.Tensor:
    """`view` itself on the CPU, else its copy on `device` (copy_with_layout)."""
    return view if device == "cpu" else copy_with_layout(view, device)


def copy_back(view: torch.Tensor, moved: torch.Tensor) -> None:
    """Writes `moved`'s span back over `view` (nothing to do when `moved` is the view)."""
    if moved is view or view.numel() == 0:
        return
    _span(view).copy_(_span(moved))
