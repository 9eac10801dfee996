"""A loaded KernelBench pair (load kind "kernelbench", docs/06_worker_protocol.md §7.1): the
models built, the inputs' template, the problem described, and the role's tasks.

Built by kcv.worker.problem.load once the modules are executed. The reference role builds Model
twice (float32, and float64 widened with its plain tensor attributes) and serves the reference
tasks (kcv.worker.reference); its load runs the float32 forward on the load seed's draw to
describe the outputs and learn the problem's facts (kcv.worker.facts). The candidate role
builds ModelNew, copies Model's parameters and buffers into it and drops Model right after, so
a candidate walking gc.get_objects() finds no reference tensors to overwrite in its process;
it serves run and describe (kcv.worker.candidate). Scalars of get_inputs() (a dim, an eps) are
re-made here from the load seed's get_inputs(); calls carry only the tensor inputs.
"""

import contextlib
import os

import torch

from kcv.worker import facts, modexec
from kcv.worker.candidate import CandidateSide
from kcv.worker.errors import LoadError, RequestError, load_error
from kcv.worker.float64 import promote_attributes
from kcv.worker.meta import meta_sample, model_bytes_on_meta, size_on_meta
from kcv.worker.outputs import BadOutput, flatten
from kcv.worker.reference import ReferenceSide
from kcv.worker.tasks import REFERENCE_KINDS
from kcv.worker.views import dtype_name

_sync = torch.cuda.synchronize  # bound before candidate code could replace it


def scalar(value):
    """The JSON description of a non-tensor input."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": "scalar", "value": value}
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in value):
        return {"kind": "scalar", "value": list(value)}
    return {"kind": "other", "type": type(value).__name__}


def description(sample: list, outs: list, constants: dict) -> dict:
    """problem's inputs, outputs and constants."""
    return {"inputs": [{"kind": "tensor", "dtype": dtype_name(x.dtype), "shape": list(x.shape)}
                       if isinstance(x, torch.Tensor) else scalar(x) for x in sample],
            "outputs": [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)} for t in outs],
            "constants": constants}


def copy_weights(source: torch.nn.Module, target: torch.nn.Module) -> tuple:
    """Copies every parameter and buffer of `source` into the one of `target` with the same name
    and shape, inference tensors included; returns (copied, target's total)."""
    def named(m):
        return dict(list(m.named_parameters()) + list(m.named_buffers()))

    have, want = named(source), named(target)
    copied = 0
    with torch.no_grad():
        for name, t in want.items():
            s = have.get(name)
            if s is not None and tuple(s.shape) == tuple(t.shape):
                # a tensor made under inference_mode can only be written under it
                with torch.inference_mode() if t.is_inference() else contextlib.nullcontext():
                    t.copy_(s)
                copied += 1
    return copied, len(want)


class Template:
    """Where the tensors of a call go among get_inputs()'s items (the others are reused)."""

    def __init__(self, sample: list):
        self.slots = [None if isinstance(x, torch.Tensor) else x for x in sample]
        self.count = sum(isinstance(x, torch.Tensor) for x in sample)

    def args(self, tensors: list) -> list:
        if len(tensors) != self.count:
            raise RequestError(f"inputs: expected {self.count} tensor(s) (those of get_inputs), "
                               f"got {len(tensors)}")
        it = iter(tensors)
        return [next(it) if slot is None else slot for slot in self.slots]


class KernelBenchPair:
    """What a kernelbench load made; call() serves the call requests' tasks."""

    def __init__(self, f: dict, device: str, ref, cand, retrace=None):
        self.role, self.seed, self.device = f["role"], f["seed"], device
        self.name, self.op = f["name"], f["op"]
        self.ref = ref
        self.weights = None
        self.side = None
        self.sized_only = False
        self.want_facts = f.get("facts", True)
        self.build: dict | None = None  # the load's JIT builds (problem.load, kcv.worker.jitbuild)
        if self.role == "reference" and f.get("size_on_meta_over"):
            sized = size_on_meta(ref, self.seed)
            if sized is not None and sum(t.numel() * t.element_size() for t in sized[0] + sized[1]
                                         if isinstance(t, torch.Tensor)) > f["size_on_meta_over"]:
                self.sized_only = True
                self.template = Template(sized[0])
                # Only the constants' facts (cheap, by ast): what a reduced shape is made of.
                consts = modexec.int_constants(ref)
                self.problem = {**description(*sized, consts), "sized_on_meta": True,
                                "facts": {"constants": facts.constant_facts(
                                    f["reference_code"], consts)}}
                return
            if sized is None and f.get("refuse_models_over"):
                held = model_bytes_on_meta(ref, self.seed)
                if held is not None and held > f["refuse_models_over"]:
                    raise LoadError(
                        f"problem_error: the reference's models hold {held / 2**20:.1f} MiB of "
                        f"parameters and buffers at this shape (float32 and float64 copies, "
                        f"counted on meta, where its forward could not be sized), over the "
                        f"budget of {f['refuse_models_over'] / 2**20:.0f} MiB")
        if self.role == "reference":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            model32 = self._build(ref.Model, "reference_code").to(device)
            # built at float32 like model32 (same init draws), then widened with its plain
            # tensor attributes; its forward runs under float64_forward() (kcv.worker.float64)
            model64 = self._build(ref.Model, "reference_code").double().to(device)
            promote_attributes(model64)
        else:
            model = self._build(ref.Model, "reference_code")
            candidate = self._build(cand.ModelNew, "candidate_code")
            self.weights = copy_weights(model, candidate)
            del model
            candidate = candidate.to(device)
        try:
            sample = self._sample(ref)
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "problem_error", "reference_code get_inputs()") from None
        self.template = Template(sample)
        self.problem = None
        if self.role == "reference":
            self.side = ReferenceSide(device, model32, model64, self._draw, self.template.args)
            self.problem = self._describe(model32, sample, f.get("reference_code"), retrace)
        else:
            self.side = CandidateSide(candidate, device, vars(cand),
                                      os.environ.get("TORCH_EXTENSIONS_DIR"), self.template.args)

    @property
    def kinds(self) -> tuple:
        if self.sized_only:  # the reference's tasks reach call(), which refuses them all
            return REFERENCE_KINDS
        return self.side.kinds

    def _draw(self, seed: int) -> list:
        torch.manual_seed(seed)
        return list(self.ref.get_inputs())

    def _sample(self, ref) -> list:
        """get_inputs() under the load's seed. The candidate needs only which items are tensors
        and the values of the others, so it draws on the meta device (no memory: a big problem's
        inputs are gigabytes, and the reference worker draws them at the same time), unless that
        draw could differ from the reference's (meta_sample); the reference draws for real: its
        load runs the forward on the sample."""
        if self.role != "reference":
            sample = meta_sample(ref, self.seed)
            if sample is not None:
                return sample
        return self._draw(self.seed)

    def _build(self, cls, what: str) -> torch.nn.Module:
        try:
            torch.manual_seed(self.seed)
            init = self.ref.get_init_inputs()
            torch.manual_seed(self.seed)
            return cls(*init)
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "init_error", what) from None

    def _describe(self, model32, sample: list, code: str | None, retrace) -> dict:
        args = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in sample]

        def forward(args=args):
            torch.manual_seed(self.seed)
            with torch.no_grad():
                outs = flatten(model32(*args))
            if self.device == "cuda":
                _sync()
            return outs

        constants = modexec.int_constants(self.ref)
        try:
            if self.want_facts:
                outs, found = facts.problem_facts(forward, args, code, constants, retrace,
                                                  self.seed)
            else:  # another shape of a problem whose facts kcv has: the outputs only
                outs, found = forward(), {"constants": facts.constant_facts(code, constants)}
        except BadOutput as e:
            raise LoadError(f"problem_error: reference_code Model: {e}") from None
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "problem_error", "reference_code Model.forward") from None
        return {**description(sample, outs, constants), "facts": found}

    def loaded_fields(self) -> dict:
        out = {"role": self.role, "device": self.device, "seed": self.seed,
               "torch": torch.__version__,
               "triton_interpret": os.environ.get("TRITON_INTERPRET") == "1"}
        if self.weights is not None:
            out["weights_copied"], out["weights_total"] = self.weights
        if isinstance(self.side, CandidateSide):
            out.update(self.side.loaded_fields())
        if self.problem is not None:
            out["problem"] = self.problem
        if self.build is not None:
            out["build"] = self.build
        return out

    def call(self, task, inputs: list, outputs: list, kwargs: dict) -> dict | None:
        if self.sized_only:
            raise RequestError("this load only sized the problem on meta (problem.sized_on_meta):"
                               " load it again without size_on_meta_over to call it")
        return self.side.serve(task, inputs, outputs, kwargs)

    def after_exception(self) -> str:
        return self.side.after_exception() if isinstance(self.side, CandidateSide) else ""

    @property
    def exit_status(self):
        return getattr(self.side, "exit_status", None)
