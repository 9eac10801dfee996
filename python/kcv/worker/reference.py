"""The reference role's tasks, draw, forget, reference64 and reference32 (docs/06 §7.3), for
either load kind: ReferenceSide holds the float32 and float64 models, the draw function, and
the inputs kept per seed.

- draw: `draw(seed)` (get_inputs() under torch.manual_seed(seed), or a pickle load's given
  inputs) written into the outputs at their own dtypes; with keep, the tensors are kept
  (contiguous, as kcv received them) under the seed, for later tasks' inputs_seed.
- stage: the call's inputs copied to the worker's device with their layout and kept under the
  task's key (one staged set at a time: a new stage replaces it), for later tasks' inputs_key,
  so a probe's inputs cross to the worker once however many reference runs it needs.
- reference64: the float64 model on float64 copies of the inputs (integer inputs at their own
  dtype) under float64_forward (kcv.worker.float64) and the task's NaN and subnormal semantics
  (kcv.worker.semantics), TF32 off; results converted into the output views' dtype.
- reference32: the float32 model on copies at the inputs' own dtypes, under the task's TF32
  flags (restored after) and autocast; results converted into the views' dtype.
Both runs use cuDNN's deterministic algorithms only (deterministic_cudnn, restored after), so a
probe's fp64 value and the bound's scale E that the fp32 run gives are the same bits from one
audit to the next (docs/decisions/0005-deterministic-trusted-runs.md).
Every copy keeps the view's strides (kcv.worker.devices.layout_copy), and the kept tensors are
never handed to a model (a model that writes its inputs cannot change them). reference64 and
reference32 reply with forward_s, the seconds of the model's run alone (synchronized), so kcv's
timings split a reference call into its run and the copies around it (docs/06 §4). Naming a seed that
is not kept is bad_output, as §7.3 says: kcv then sends the inputs again.
"""

import contextlib
import time

import torch

from kcv.worker import semantics
from kcv.worker.devices import layout_copy
from kcv.worker.errors import RequestError
from kcv.worker.float64 import float64_forward
from kcv.worker.outputs import BadOutput, store
from kcv.worker.tasks import REFERENCE_KINDS

_sync = torch.cuda.synchronize
_AUTOCAST = {"f16": torch.float16, "bf16": torch.bfloat16}


@contextlib.contextmanager
def tf32_flags(cudnn: bool, matmul: bool):
    """torch.backends' TF32 flags set for one task, then restored."""
    was = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = was


@contextlib.contextmanager
def deterministic_cudnn():
    """cuDNN restricted to its deterministic algorithms (and not benchmarking) for one run, then
    restored: a convolution's result is then the same bits on every run on one machine."""
    was = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    try:
        yield
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = was


def _none(task, inputs: list, outputs: list, what: str) -> None:
    if inputs or outputs:
        raise RequestError(f"inputs/outputs: a {task.kind} task carries none ({what})")


class ReferenceSide:
    """Serves the reference tasks. `model32`/`model64`: the models (model64 already widened);
    `draw(seed)`: the items of one draw; `args_of(tensors)`: the argument list of a call."""

    kinds = REFERENCE_KINDS

    def __init__(self, device: str, model32, model64, draw, args_of):
        self.device = device
        self.model32, self.model64 = model32, model64
        self.draw, self.args_of = draw, args_of
        self.kept = {}  # seed -> its drawn tensors, contiguous
        self.staged = (None, [])  # (key, the staged inputs with their layouts)

    def serve(self, task, inputs: list, outputs: list, kwargs: dict) -> None:
        if task.kind == "draw":
            if inputs:
                raise RequestError("inputs: a draw task carries none")
            made = [x for x in self.draw(task.seed) if isinstance(x, torch.Tensor)]
            store(made, outputs, convert=False)
            if task.keep:
                self.kept[task.seed] = [x.detach().contiguous() for x in made]
        elif task.kind == "stage":
            if outputs:
                raise RequestError("outputs: a stage task carries none")
            self.staged = (None, [])  # the old set goes before the new one is made
            self.staged = (task.key, [layout_copy(v, self.device, v.dtype) for v in inputs])
            if self.device == "cuda":
                _sync()
        elif task.kind == "forget":
            _none(task, inputs, outputs, "it only drops kept inputs")
            self.kept.pop(task.seed, None)
        elif task.kind == "reference64":
            return self._reference64(task, inputs, outputs)
        else:
            return self._reference32(task, inputs, outputs)
        return None

    def _tensors(self, task, inputs: list) -> list:
        """The call's views, the inputs staged under task.inputs_key, or the kept inputs of
        task.inputs_seed (then the call has none)."""
        if task.inputs_key is not None:
            if inputs or task.inputs_seed is not None:
                raise RequestError("inputs: a task with inputs_key carries no inputs and no "
                                   "inputs_seed")
            key, staged = self.staged
            if key != task.inputs_key:
                raise BadOutput(f"task.inputs_key: {task.inputs_key} names no staged inputs (a "
                                "stage task under that key, the last one); send the inputs")
            return staged
        if task.inputs_seed is None:
            return inputs
        if inputs:
            raise RequestError("inputs: a task with inputs_seed carries no inputs")
        kept = self.kept.get(task.inputs_seed)
        if kept is None:
            raise BadOutput(f"task.inputs_seed: {task.inputs_seed} names no kept inputs (a draw "
                            "with keep under that seed, not forgotten since); send the inputs")
        return kept

    def _forward(self, model, args, seed: int):
        """(the model's result, the seconds it took)."""
        torch.manual_seed(seed)
        t0 = time.perf_counter()
        with torch.no_grad(), deterministic_cudnn():
            result = model(*args)
        if self.device == "cuda":
            _sync()
        return result, time.perf_counter() - t0

    def _reference64(self, task, inputs: list, outputs: list) -> dict:
        copies = [layout_copy(t, self.device, torch.float64 if t.is_floating_point() else t.dtype)
                  for t in self._tensors(task, inputs)]
        args = self.args_of(copies)
        with tf32_flags(False, False), float64_forward(), \
                semantics.active(task.nan, task.subnormals):
            result, seconds = self._forward(self.model64, args, task.seed)
        store(result, outputs, convert=True)
        return {"forward_s": seconds}

    def _reference32(self, task, inputs: list, outputs: list) -> dict:
        copies = [layout_copy(t, self.device, t.dtype) for t in self._tensors(task, inputs)]
        args = self.args_of(copies)
        autocast = contextlib.nullcontext() if task.autocast == "none" else \
            torch.autocast(device_type=self.device, dtype=_AUTOCAST[task.autocast])
        with tf32_flags(task.cudnn_tf32, task.matmul_tf32), autocast:
            result, seconds = self._forward(self.model32, args, task.seed)
        store(result, outputs, convert=True)
        return {"forward_s": seconds}
