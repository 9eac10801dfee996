"""Moving a call's input views to the device and back, layout included.

On the CPU the kernel gets the views over the shared file themselves. On CUDA each input is
copied with the storage span between its first and last element, so the device tensor has the
same strides and padding as the view kcv sent (layout probes stay layout probes); after the call
the span is compared bitwise and written back only if the kernel changed it, so kcv's
input-mutation check sees in-place writes on the device too.
"""

import torch


def to_device(view: torch.Tensor, device: str) -> torch.Tensor:
    """`view` on `device` with its strides and the storage between its elements kept."""
    if device == "cpu":
        return view
    if view.numel() == 0:
        return view.to(device)
    extent = 1 + sum((d - 1) * s for d, s in zip(view.shape, view.stride()))
    flat = view.as_strided((extent,), (1,))
    return flat.to(device).as_strided(view.shape, view.stride())


def copy_back(view: torch.Tensor, moved: torch.Tensor) -> None:
    """Writes a device copy back over its host view when the kernel changed it (CUDA only)."""
    if moved.device.type == "cpu" or view.numel() == 0:
        return
    extent = 1 + sum((d - 1) * s for d, s in zip(view.shape, view.stride()))
    host = view.as_strided((extent,), (1,))
    back = moved.as_strided((extent,), (1,)).cpu()
    if not torch.equal(host.view(torch.uint8), back.view(torch.uint8)):
        host.copy_(back)
