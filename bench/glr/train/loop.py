"""One training run of the recipe, its JSONL log and progress bar, and the reproducibility check.

Determinism: the model comes from the seed (model.build), batches from (seed, step) (data.py),
torch.use_deterministic_algorithms(True) is on (warn_only, so an op without a deterministic
kernel is named in a warning rather than stopping a long run; the reproducibility check is what
decides), cuDNN autotuning is off, and the caller sets CUBLAS_WORKSPACE_CONFIG before CUDA starts
(train_lm.py does). AdamW runs its single-tensor (for-loop) implementation, the same on every
backend. The loss is read back every step (one host sync a step, on every backend alike), so the
log holds the exact float32 loss sequence that two runs are compared on.

Log lines (JSONL, one object each, "kind" first):
  config   family, backend, device, parameters, the Config, seed, versions, fla_hopper_guard
           (fla backend: "inactive", or "lifted" by --lift-fla-guard)
  train    step, loss, lr, tokens_per_s (this step: batch·seq_len / its wall time), elapsed_s
  eval     step, val_loss (mean over the fixed validation windows)
  summary  steps, final train loss (mean of the last 10% of steps), final val_loss, median
           tokens_per_s over the steps after the first 10, elapsed_s, recurrence calls (and those
           kcv served), sha256 of the final parameters"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from . import backends, data, model

try:
    from tqdm import tqdm
except ImportError:  # tqdm comes with fla's transformers; the plain bar covers its absence
    tqdm = None


class PlainBar:
    """A one-line progress bar on stderr, rewritten with \\r: step/total, loss, tokens/s."""

    def __init__(self, total, desc):
        self.total, self.desc, self.n, self.postfix = total, desc, 0, ""

    def set_postfix_str(self, text):
        self.postfix = text

    def update(self, n=1):
        self.n += n
        width = 30
        filled = width * self.n // max(self.total, 1)
        sys.stderr.write(f"\r{self.desc} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{self.n}/{self.total} {self.postfix}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


def progress_bar(total, desc, enabled):
    if not enabled:
        return None
    if tqdm is not None:
        return tqdm(total=total, desc=desc, dynamic_ncols=True)
    return PlainBar(total, desc)


def lr_at(step, cfg):
    """Linear warmup to cfg.lr, then cosine to cfg.lr · min_lr_ratio at the last step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    span = max(cfg.steps - cfg.warmup - 1, 1)
    cosine = 0.5 * (1 + math.cos(math.pi * min((step - cfg.warmup) / span, 1.0)))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * cosine)


def optimizer(net, cfg):
    """AdamW; matrices decay, vectors (norms, biases, A_log, dt_bias) do not."""
    decay = [p for p in net.parameters() if p.dim() >= 2]
    rest = [p for p in net.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=cfg.lr, betas=(0.9, 0.95), foreach=False, fused=False)


def parameter_digest(net):
    h = hashlib.sha256()
    for name, p in net.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def deterministic():
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False


@torch.no_grad()
def evaluate(net, batches, device):
    # The model stays in training mode: fla's layers switch to their fused_recurrent (decode) ops
    # in eval mode at q_len <= 64; no module here behaves differently in training mode.
    losses = []
    for x, y in batches:
        with backends.autocast(device):
            logits = net(x)
        losses.append(F.cross_entropy(logits.float().flatten(0, 1), y.flatten()).item())
    return sum(losses) / len(losses)


def versions():
    out = {"torch": torch.__version__, "python": sys.version.split()[0]}
    for name in ("fla", "triton"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a missing or broken package is just not listed
            pass
    return out


def run(family, backend, cfg, data_dir, log_path, device, seed=0, progress=True,
        lift_fla_guard=False):
    """Trains one model; writes log_path (JSONL) and returns the summary, with the loss
    sequence under "losses". lift_fla_guard: backends.fla_hopper_guard."""
    deterministic()
    train_tokens, val_tokens = data.load(data_dir, "train"), data.load(data_dir, "val")
    batches = data.TrainBatches(train_tokens, cfg.seq_len, cfg.batch, seed)
    val = data.val_batches(val_tokens, cfg.seq_len, cfg.batch, cfg.eval_windows, device)
    net = model.build(family, cfg, seed).to(device)
    opt = optimizer(net, cfg)
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    losses, rates, evals = [], [], []
    with open(log_path, "w", encoding="utf-8") as log, \
            backends.bound(backend, family, device, lift_fla_guard) as calls:
        def emit(kind, **fields):
            log.write(json.dumps({"kind": kind, **fields}) + "\n")
            log.flush()

        emit("config", family=family, backend=backend, device=str(device),
             parameters=model.parameter_count(net), seed=seed, config=dataclasses.asdict(cfg),
             data=os.path.abspath(data_dir), versions=versions(),
             float32_matmul_precision=torch.get_float32_matmul_precision(),
             fla_hopper_guard=calls.fla_guard)
        bar = progress_bar(cfg.steps, f"{family}/{backend}", progress)
        start = time.perf_counter()
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            x, y = batches(step, device)
            lr = lr_at(step, cfg)
            for group in opt.param_groups:
                group["lr"] = lr
            with backends.autocast(device):
                logits = net(x)
            loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip, foreach=False)
            opt.step()
            opt.zero_grad(set_to_none=True)
            value = loss.item()
            if step == 0:
                backends.check_served(backend, calls)
            dt = time.perf_counter() - t0
            losses.append(value)
            rates.append(cfg.batch * cfg.seq_len / dt)
            emit("train", step=step, loss=value, lr=lr, tokens_per_s=rates[-1],
                 elapsed_s=time.perf_counter() - start)
            if not math.isfinite(value):
                raise FloatingPointError(f"{family}/{backend}: loss {value} at step {step}")
            if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
                evals.append(evaluate(net, val, device))
                emit("eval", step=step, val_loss=evals[-1])
            if bar is not None:
                last_val = evals[-1] if evals else float("nan")
                bar.set_postfix_str(f"loss {value:.4f} val {last_val:.4f} "
                                    f"{rates[-1] / 1e3:.1f}k tok/s")
                bar.update(1)
        if bar is not None:
            bar.close()
        backends.check_served(backend, calls)
        tail = losses[-max(1, len(losses) // 10):]
        summary = dict(steps=cfg.steps, train_loss=sum(tail) / len(tail), val_loss=evals[-1],
                       tokens_per_s=statistics.median(rates[10:] or rates),
                       elapsed_s=time.perf_counter() - start, recurrence_calls=calls.op,
                       kcv_calls=calls.kcv if backend == "kcv" else None,
                       parameters_sha256=parameter_digest(net))
        emit("summary", **summary)
    return dict(summary, losses=losses)


def read_run(log_path):
    """(loss sequence, sha256 of the final parameters or None) of a run's log."""
    with open(log_path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    digest = next((r["parameters_sha256"] for r in rows if r["kind"] == "summary"), None)
    return [r["loss"] for r in rows if r["kind"] == "train"], digest


def compare(first, second):
    """{identical, steps, first_difference}: two loss sequences compared exactly (bitwise: the
    losses are float32 values held as Python floats)."""
    diff = next((i for i, (a, b) in enumerate(zip(first, second))
                 if a != b and not (math.isnan(a) and math.isnan(b))), None)
    if diff is None and len(first) != len(second):
        diff = min(len(first), len(second))
    return {"identical": diff is None, "steps": [len(first), len(second)],
            "first_difference": None if diff is None else
            {"step": diff, "losses": [first[diff] if diff < len(first) else None,
                                      second[diff] if diff < len(second) else None]}}
