"""The model of the training recipe: a byte-level language model (vocabulary 256, embedding tied
to the output) of pre-norm blocks, each an fla layer of the chosen family followed by a SwiGLU
MLP, both with residual connections. fla's layers are used as fla ships them; their Triton
RMSNorm and short-convolution modules are swapped for torch stand-ins with the same parameters
(kcv.glr.fla_modules), under every backend, so that only the recurrence op differs.

Families and fla 0.6 layers (each calls one chunk op when training):
  gdn  GatedDeltaNet               chunk_gated_delta_rule (l2norm, sigmoid β, fused gate in the op)
  kda  KimiDeltaAttention          chunk_kda (the same, with a per-channel gate)
  gla  GatedLinearAttention        chunk_gla (per-channel gate, expand_k 0.5 as fla's default)
  ssd  SimpleGatedLinearAttention  chunk_simple_gla (one scalar gate per head: the SSD /
                                   Mamba-2 recurrence; fla 0.6's Mamba2 layer calls mamba_ssm's
                                   kernels, not an fla op, so it cannot run on kcv)
  la   LinearAttention             chunk_linear_attn (fla's defaults: Hadamard feature map,
                                   no normalisation)
Heads have K, V ≤ 128, what kcv's CUDA chunk kernels take.

Initialisation follows fla's models: Linear and Embedding weights N(0, 0.02), Linear biases 0;
the layers' own parameters (A_log, dt_bias, ...) keep fla's initialisation. The model is built on
the CPU from the seed, then moved, so every backend and device starts from the same weights."""

from __future__ import annotations

import dataclasses
import importlib

import torch
import torch.nn.functional as F
from torch import nn

from kcv.glr.fla_modules import use_torch_modules

#: family -> (fla layer module, class, constructor arguments beyond hidden_size and num_heads).
FAMILIES = {
    "gdn": ("fla.layers.gated_deltanet", "GatedDeltaNet", lambda c: dict(
        head_dim=c.head_dim, expand_v=1)),
    "kda": ("fla.layers.kda", "KimiDeltaAttention", lambda c: dict(
        head_dim=c.head_dim, expand_v=1)),
    "gla": ("fla.layers.gla", "GatedLinearAttention", lambda c: dict(
        expand_k=0.5, expand_v=c.heads * c.head_dim / c.d_model)),
    "ssd": ("fla.layers.simple_gla", "SimpleGatedLinearAttention", lambda c: dict(
        expand_k=c.heads * c.head_dim / c.d_model, expand_v=c.heads * c.head_dim / c.d_model)),
    "la": ("fla.layers.linear_attn", "LinearAttention", lambda c: dict(
        expand_k=c.heads * c.head_dim / c.d_model, expand_v=c.heads * c.head_dim / c.d_model)),
}


@dataclasses.dataclass(frozen=True)
class Config:
    d_model: int
    layers: int
    heads: int
    head_dim: int
    mlp: int  # SwiGLU hidden width
    seq_len: int
    batch: int
    steps: int
    lr: float
    warmup: int
    eval_every: int
    eval_windows: int
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    min_lr_ratio: float = 0.1


#: ~40 M parameters; 16 K tokens a step, 2 000 steps = 33 M tokens (0.7 of train.bin).
FULL = Config(d_model=512, layers=12, heads=4, head_dim=128, mlp=1408, seq_len=1024, batch=16,
              steps=2000, lr=1e-3, warmup=100, eval_every=100, eval_windows=64)
#: for the CPU: tens of thousands of parameters, seconds a run. seq_len > 64: fla's GLA layer
#: runs its fused_recurrent op at q_len <= 64 even when training.
TINY = Config(d_model=32, layers=2, heads=2, head_dim=16, mlp=64, seq_len=128, batch=2, steps=12,
              lr=3e-3, warmup=0, eval_every=6, eval_windows=4)


class SwiGLU(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, family, cfg, index):
        super().__init__()
        module_name, cls_name, extra = FAMILIES[family]
        layer_cls = getattr(importlib.import_module(module_name), cls_name)
        self.norm1, self.norm2 = nn.RMSNorm(cfg.d_model), nn.RMSNorm(cfg.d_model)
        self.mixer = layer_cls(hidden_size=cfg.d_model, num_heads=cfg.heads, layer_idx=index,
                               **extra(cfg))
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))[0]
        return x + self.mlp(self.norm2(x))


class ByteLM(nn.Module):
    def __init__(self, family, cfg):
        super().__init__()
        self.embed = nn.Embedding(256, cfg.d_model)
        self.blocks = nn.ModuleList(Block(family, cfg, i) for i in range(cfg.layers))
        self.norm = nn.RMSNorm(cfg.d_model)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.norm(x), self.embed.weight)


def _init(module):
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def build(family, cfg, seed):
    """The model of `family` at `cfg`, on the CPU, initialised from `seed`."""
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {', '.join(FAMILIES)}, got {family!r}")
    torch.manual_seed(seed)
    model = ByteLM(family, cfg)
    model.apply(_init)
    return use_torch_modules(model)


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())
