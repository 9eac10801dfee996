"""The torch side of a pickle load (kcv.worker.pickled checks the request): the callable wrapped
in the same ReferenceSide / CandidateSide a KernelBench pair uses, so both load kinds serve the
tasks alike.

The reference role's float64 model: an nn.Module is deep-copied, `.double()`d and its plain
tensor attributes widened (kcv.worker.float64), exactly as a KernelBench Model; a plain function
is its own float64 model (it gets float64 tensors, under float64_forward). The given inputs are
the draw of every seed; the load runs the float32 forward on them for the problem's outputs and
facts (kcv.worker.facts), under the load's seed.
"""

import copy
import os

import torch

from kcv.worker import facts
from kcv.worker.candidate import CandidateSide
from kcv.worker.errors import LoadError, load_error
from kcv.worker.float64 import promote_attributes
from kcv.worker.kernelbench import Template, description
from kcv.worker.outputs import BadOutput, flatten
from kcv.worker.reference import ReferenceSide

_sync = torch.cuda.synchronize


def _float64_model(fn):
    if not isinstance(fn, torch.nn.Module):
        return fn
    wide = copy.deepcopy(fn).double()
    promote_attributes(wide)
    return wide


class PickledCallable:
    def __init__(self, fn, name: str, op: str, device: str, f: dict, inputs, namespace: dict):
        self.name, self.op, self.device = name, op, device
        self.role, self.seed = f["role"], f["seed"]
        self.pass_params = f["pass_params"]
        self.problem = None
        if self.role == "reference":
            if isinstance(fn, torch.nn.Module):
                fn = fn.to(device)
            given = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
            self.template = Template(given)
            self.side = ReferenceSide(device, fn, _float64_model(fn), lambda seed: given,
                                      self.template.args)
            self.problem = self._describe(fn, given)
        else:
            self.template = None
            self.side = CandidateSide(fn, device, namespace,
                                      os.environ.get("TORCH_EXTENSIONS_DIR"), list)

    @property
    def kinds(self) -> tuple:
        return self.side.kinds

    def _describe(self, fn, given: list) -> dict:
        def forward(args=given):
            torch.manual_seed(self.seed)
            with torch.no_grad():
                outs = flatten(fn(*args))
            if self.device == "cuda":
                _sync()
            return outs

        try:
            outs, found = facts.problem_facts(forward, given, None, {}, None, self.seed)
        except BadOutput as e:
            raise LoadError(f"problem_error: payload: {e}") from None
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "problem_error", "payload on the given inputs") from None
        return {**description(given, outs, {}), "facts": found}

    def loaded_fields(self) -> dict:
        out = {"role": self.role, "device": self.device, "seed": self.seed,
               "torch": torch.__version__,
               "triton_interpret": os.environ.get("TRITON_INTERPRET") == "1"}
        if isinstance(self.side, CandidateSide):
            out.update(self.side.loaded_fields())
        if self.problem is not None:
            out["problem"] = self.problem
        return out

    def call(self, task, inputs: list, outputs: list, kwargs: dict) -> dict | None:
        return self.side.serve(task, inputs, outputs, kwargs)

    def after_exception(self) -> str:
        return self.side.after_exception() if isinstance(self.side, CandidateSide) else ""

    @property
    def exit_status(self):
        return getattr(self.side, "exit_status", None)
