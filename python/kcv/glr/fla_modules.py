"""Torch stand-ins for the parts of fla's layers that are Triton kernels outside the recurrence:
fla.modules.RMSNorm, FusedRMSNormGated and ShortConvolution.

`use_torch_modules(model)` swaps every such module in `model` for one computing the same function
in plain torch with the same Parameter objects (so state_dicts, optimizers and parameter counts
are unchanged). Two uses:
  * on the CPU, where Triton does not run, fla's layers run whole (test_glr_fla.py, the CPU smoke
    test of the training recipe);
  * on a GPU, the training recipe (bench/glr/train) applies it under every backend, so that the
    recurrence op is the only code that differs between a kcv, an fla and a reference run, and
    the rest of the model is torch ops that torch.use_deterministic_algorithms governs.

The short convolution stand-in covers the training path only: no cache, no final state, no
cu_seqlens (NotImplementedError otherwise). GatedDeltaNet fuses its q/k/v convolutions into one
Triton call when their backends agree; use_torch_modules turns that fusion off on the layer
instance, so each stand-in runs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from fla.modules import FusedRMSNormGated, RMSNorm, ShortConvolution


class TorchRMSNorm(torch.nn.Module):
    """fla's RMSNorm / FusedRMSNormGated (swish or sigmoid output gate) in torch, in float32,
    returned in the input's dtype; the same weight and bias Parameters."""

    def __init__(self, norm, gated):
        super().__init__()
        self.weight, self.bias, self.eps = norm.weight, getattr(norm, "bias", None), norm.eps
        self.gated, self.activation = gated, getattr(norm, "activation", "swish")

    def forward(self, x, g=None, *args, **kwargs):
        y = x.float() * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + self.eps)
        y = y * self.weight.float() if self.weight is not None else y
        y = y + self.bias.float() if self.bias is not None else y
        if self.gated:
            gf = g.float()
            y = y * (gf * torch.sigmoid(gf) if self.activation in ("swish", "silu")
                     else torch.sigmoid(gf))
        return y.to(x.dtype)


class TorchShortConvolution(torch.nn.Module):
    """fla's ShortConvolution (depthwise causal conv1d, optional SiLU) in torch: the training path,
    x [B, T, D] -> (y [B, T, D], None); the same weight [D, 1, W] and bias Parameters. y is
    contiguous, as the Triton kernel's is (the layers' q/k/v are views of it)."""

    backend = "torch"

    def __init__(self, conv):
        super().__init__()
        self.weight, self.bias = conv.weight, conv.bias
        self.activation, self.kernel_size = conv.activation, conv.kernel_size

    def forward(self, x, residual=None, mask=None, cache=None, output_final_state=False,
                cu_seqlens=None, **kwargs):
        if cache is not None or output_final_state or cu_seqlens is not None:
            raise NotImplementedError(
                "TorchShortConvolution runs the training path only (no cache, final state or "
                "cu_seqlens)")
        if mask is not None:
            x = x * mask.unsqueeze(-1)
        T, width = x.shape[1], self.weight.shape[-1]
        y = F.conv1d(x.transpose(1, 2), self.weight, self.bias, padding=width - 1,
                     groups=self.weight.shape[0])[..., :T].transpose(1, 2).contiguous()
        if self.activation is not None:
            y = F.silu(y)
        if residual is not None:
            y = y + residual
        return y, None


def use_torch_modules(model: torch.nn.Module) -> torch.nn.Module:
    """Swaps fla's RMSNorm, FusedRMSNormGated and ShortConvolution modules in `model` (in place)
    for their torch stand-ins; returns `model`."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, (FusedRMSNormGated, RMSNorm)):
                setattr(parent, name, TorchRMSNorm(child, isinstance(child, FusedRMSNormGated)))
            elif isinstance(child, ShortConvolution):
                setattr(parent, name, TorchShortConvolution(child))
        if hasattr(parent, "_use_fused_qkv_conv"):
            parent._use_fused_qkv_conv = lambda *args, **kwargs: False
    return model
