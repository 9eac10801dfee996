"""Moving a call's input views to the device and back, layout included.

On the CPU the kernel gets the views over the shared file themselves. On CUDA each input is
copied with the storage span between its first and last element, so the device tensor has the
same strides and padding as the view kcv sent (layout probes stay layout probes); after the call
the span is compared bitwise and written back only if the kernel changed it, so kcv's
input-mutation check sees in-place writes on the device too.

The comparison runs on the device, against a copy of the span taken before the call
(`snapshot`): most kernels leave their inputs alone, and comparing on the host would copy every
input back into fresh host pages and compare it on one core, per call. Where the device has no
room for the copy, the span is copied back and compared on the host instead.
"""

import torch


def _span(t: torch.Tensor) -> torch.Tensor:
    """The storage between `t`'s first and last element, as a flat tensor of its dtype."""
    extent = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride()))
    return t.as_strided((extent,), (1,))


def _bytes(flat: torch.Tensor) -> torch.Tensor:
    return flat.view(torch.uint8)


def copy_with_layout(view: torch.Tensor, device: str) -> torch.Tensor:
    """A copy of `view` on `device` (a copy even on the same device) with its strides and the
    storage between its elements kept."""
    if view.numel() == 0:
        return view.to(device, copy=True)
    return _span(view).to(device, copy=True).as_strided(view.shape, view.stride())


def to_device(view: torch.Tensor, device: str) -> torch.Tensor:
    """`view` itself on the CPU, else its copy on `device` (copy_with_layout)."""
    return view if device == "cpu" else copy_with_layout(view, device)


def snapshot(view: torch.Tensor, moved: torch.Tensor) -> torch.Tensor | None:
    """The moved span as it is before the call, kept on its device for copy_back; None when
    `moved` is the view itself or empty, or when the device has no room for the copy."""
    if moved is view or moved.numel() == 0:
        return None
    try:
        return _span(moved).clone()
    except torch.OutOfMemoryError:
        return None


def copy_back(view: torch.Tensor, moved: torch.Tensor, before: torch.Tensor | None) -> None:
    """Writes `moved`'s span back over `view` when the kernel changed it: compared with
    `before` on the device when there is one, else on the host."""
    if moved is view or view.numel() == 0:
        return
    after = _span(moved)
    if before is not None:
        if torch.equal(_bytes(after), _bytes(before)):
            return
        _span(view).copy_(after)
        return
    back = after.cpu() if after.device.type != "cpu" else after
    host = _span(view)
    if not torch.equal(_bytes(host), _bytes(back)):
        host.copy_(back)
