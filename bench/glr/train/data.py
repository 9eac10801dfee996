"""The corpus of scripts/build-text-corpus as batches: train.bin and val.bin are uint8 token
streams (one byte = one token), read through numpy memory maps.

Training batches are a pure function of (seed, step): the stream is cut into non-overlapping
windows of seq_len + 1 bytes, each epoch visits them in a permutation drawn from
numpy.random.default_rng((seed, epoch)), and step s takes windows s·batch … s·batch + batch − 1
of that sequence. Every backend and every rerun therefore sees the same bytes in the same order,
and a run can be repeated from any step. Validation uses a fixed set of windows spread evenly
over val.bin."""

from __future__ import annotations

import os

import numpy as np
import torch


def load(data_dir, split):
    path = os.path.join(data_dir, f"{split}.bin")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no corpus here; build it with scripts/build-text-corpus")
    return np.memmap(path, dtype=np.uint8, mode="r")


class TrainBatches:
    def __init__(self, tokens, seq_len, batch, seed):
        self.tokens, self.seq_len, self.batch, self.seed = tokens, seq_len, batch, seed
        self.windows = (len(tokens) - 1) // seq_len
        if self.windows < batch:
            raise ValueError(f"train.bin has {len(tokens)} bytes: fewer than one batch of "
                             f"{batch} windows of {seq_len + 1}")
        self._epoch, self._order = None, None

    def _window(self, index):
        epoch, i = divmod(index, self.windows)
        if epoch != self._epoch:
            rng = np.random.default_rng((self.seed, epoch))
            self._epoch, self._order = epoch, rng.permutation(self.windows)
        start = int(self._order[i]) * self.seq_len
        return self.tokens[start:start + self.seq_len + 1]

    def __call__(self, step, device):
        """(inputs, targets), int64 [batch, seq_len], of training step `step`."""
        rows = np.stack([self._window(step * self.batch + b) for b in range(self.batch)])
        t = torch.from_numpy(rows.astype(np.int64)).to(device)
        return t[:, :-1], t[:, 1:]


def val_batches(tokens, seq_len, batch, count, device):
    """`count` windows spread evenly over val.bin, in batches of `batch`."""
    windows = (len(tokens) - 1) // seq_len
    if windows < 1:
        raise ValueError(f"val.bin has {len(tokens)} bytes: less than one window of {seq_len + 1}")
    starts = np.linspace(0, windows - 1, num=min(count, windows)).round().astype(np.int64)
    rows = np.stack([tokens[s * seq_len:s * seq_len + seq_len + 1] for s in starts])
    t = torch.from_numpy(rows.astype(np.int64)).to(device)
    return [(t[i:i + batch, :-1], t[i:i + batch, 1:]) for i in range(0, len(t), batch)]
