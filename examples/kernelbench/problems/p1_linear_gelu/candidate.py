import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct: one fused addmm, then GELU written out with erf (same parameter names, so the
    harness copies the reference's weights)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return 0.5 * y * (1.0 + torch.erf(y * 0.7071067811865476))
