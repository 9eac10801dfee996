import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Stride-blind: reads the input's storage as if it were contiguous (what a raw-pointer
    kernel without .contiguous() does). Right for contiguous inputs, wrong for any view."""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        flat = torch.as_strided(x, (x.numel(),), (1,))
        return (flat * self.scale + self.shift).view(x.shape)
