"""A loaded KernelBench pair: the models, the inputs' template, and the three call modes.

Built by kcv.kb.problem.load once the modules are executed (that file says what each role and
mode means). The candidate role drops the reference Model right after the weight copy, so a
candidate walking gc.get_objects() finds no reference tensors to overwrite in its process.
Scalars of get_inputs() (a dim, an eps) are re-made here from the load seed's get_inputs(); calls
carry only the tensor inputs.
"""

import contextlib
import os

import torch

from kcv.worker import modexec
from kcv.worker.devices import copy_back, to_device
from kcv.worker.errors import LoadError, RequestError, load_error
from kcv.worker.float64 import float64_forward, promote_attributes
from kcv.worker.meta import meta_sample, size_on_meta
from kcv.worker.outputs import BadOutput, flatten, store
from kcv.worker.views import dtype_name

_sync = torch.cuda.synchronize  # bound before candidate code could replace it


def _scalar(value):
    """The JSON description of a non-tensor input."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": "scalar", "value": value}
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in value):
        return {"kind": "scalar", "value": list(value)}
    return {"kind": "other", "type": type(value).__name__}


def _tf32_flag(params: dict, name: str) -> bool:
    v = params.get(name, 0)
    if v not in (0, 1) or isinstance(v, str):
        raise RequestError(f"params.{name}: {v!r} is not 0 or 1")
    return bool(v)


@contextlib.contextmanager
def tf32_flags(cudnn: bool, matmul: bool):
    """torch.backends' TF32 flags set for one call, then restored (mode 2's "cudnn_tf32" and
    "matmul_tf32": the fp32-eager run under the flags a profile sanctions, docs/08_audit.md)."""
    was = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = was


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


def _io_bytes(sample: list, outs: list) -> int:
    return sum(t.numel() * t.element_size() for t in sample + outs if isinstance(t, torch.Tensor))


class KernelBenchPair:
    """What a kernelbench load made; call() serves the protocol's call requests."""

    def __init__(self, f: dict, device: str, ref, cand):
        self.role, self.seed, self.device = f["role"], f["seed"], device
        self.name, self.op = f["name"], f["op"]
        self.ref = ref
        self.weights = None
        self.kept = {}  # seed -> its get_inputs() tensors, contiguous (mode 1 with "keep")
        self.sized_only = False
        if self.role == "reference" and f.get("size_on_meta_over"):
            sized = size_on_meta(ref, self.seed)
            if sized is not None and _io_bytes(*sized) > f["size_on_meta_over"]:
                self._sized_only(*sized)
                return
        if self.role == "reference":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            self.model32 = self._build(ref.Model, "reference_code").to(device)
            # built at float32 like model32 (same init draws), then widened with its plain
            # tensor attributes; its forward runs under float64_forward() (kcv.worker.float64)
            self.model64 = self._build(ref.Model, "reference_code").double().to(device)
            promote_attributes(self.model64)
        else:
            model = self._build(ref.Model, "reference_code")
            candidate = self._build(cand.ModelNew, "candidate_code")
            self.weights = copy_weights(model, candidate)
            del model
            self.model = candidate.to(device)
        try:
            sample = self._sample(ref)
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "problem_error", "reference_code get_inputs()") from None
        self.template = [None if isinstance(x, torch.Tensor) else x for x in sample]
        self.tensor_count = sum(isinstance(x, torch.Tensor) for x in sample)
        self.problem = self._describe(sample) if self.role == "reference" else None

    def _sized_only(self, sample: list, outs: list) -> None:
        """The load of a problem sized on meta over the request's size_on_meta_over: no model
        built, nothing drawn or run; the reply describes it (problem.sized_on_meta) and calls
        are refused. The audit judges such a problem at a reduced shape, on other workers."""
        self.sized_only = True
        self.template = [None if isinstance(x, torch.Tensor) else x for x in sample]
        self.tensor_count = sum(isinstance(x, torch.Tensor) for x in sample)
        self.problem = {**self._description(sample, outs), "sized_on_meta": True}

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
        torch.manual_seed(self.seed)
        return list(ref.get_inputs())

    def _build(self, cls, what: str) -> torch.nn.Module:
        try:
            torch.manual_seed(self.seed)
            init = self.ref.get_init_inputs()
            torch.manual_seed(self.seed)
            return cls(*init)
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "init_error", what) from None

    def _describe(self, sample: list) -> dict:
        try:
            args = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in sample]
            torch.manual_seed(self.seed)
            with torch.no_grad():
                outs = flatten(self.model32(*args))
        except BadOutput as e:
            raise LoadError(f"problem_error: reference_code Model: {e}") from None
        except BaseException as e:  # noqa: BLE001
            raise load_error(e, "problem_error", "reference_code Model.forward") from None
        return self._description(sample, outs)

    def _description(self, sample: list, outs: list) -> dict:
        return {"inputs": [{"kind": "tensor", "dtype": dtype_name(x.dtype), "shape": list(x.shape)}
                           if isinstance(x, torch.Tensor) else _scalar(x) for x in sample],
                "outputs": [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)} for t in outs],
                "constants": modexec.int_constants(self.ref)}

    def loaded_fields(self) -> dict:
        out = {"role": self.role, "device": self.device, "seed": self.seed,
               "torch": torch.__version__,
               "triton_interpret": os.environ.get("TRITON_INTERPRET") == "1"}
        if self.weights is not None:
            out["weights_copied"], out["weights_total"] = self.weights
        if self.problem is not None:
            out["problem"] = self.problem
        return out

    def _inputs(self, inputs: list, params: dict) -> list:
        """The call's input views, or the kept inputs of params["inputs_seed"] (then the call
        carries none). The kept tensors are never handed to the model: mode 0 and 2 copy them."""
        if "inputs_seed" not in params:
            return inputs
        seed = params["inputs_seed"]
        if inputs:
            raise RequestError("inputs: a call with params.inputs_seed carries no inputs")
        if not isinstance(seed, (int, float)) or seed != int(seed) or int(seed) not in self.kept:
            raise RequestError(f"params.inputs_seed: {seed!r} names no kept inputs (mode 1 with "
                               "keep)")
        return self.kept[int(seed)]

    def _seed(self, params: dict) -> int:
        seed = params.get("seed")
        if not isinstance(seed, (int, float)) or seed != int(seed):
            raise RequestError("params.seed: missing or not an integer")
        return int(seed)

    def _args(self, tensors: list) -> list:
        if len(tensors) != self.tensor_count:
            raise RequestError(f"inputs: expected {self.tensor_count} tensor(s) (those of "
                               f"get_inputs), got {len(tensors)}")
        it = iter(tensors)
        return [next(it) if slot is None else slot for slot in self.template]

    def _forward(self, model, args):
        torch.manual_seed(self.seed)
        with torch.no_grad():
            result = model(*args)
        if self.device == "cuda":
            _sync()  # the whole device: work left on side streams is finished too
        return result

    def call(self, mode: int, inputs: list, outputs: list, params: dict) -> None:
        if self.sized_only:
            raise RequestError("this load only sized the problem on meta (problem.sized_on_meta):"
                               " load it again without size_on_meta_over to call it")
        if mode != 0 and self.role != "reference":
            raise RequestError(f"params.mode: mode {mode} needs the reference role")
        if mode == 0 and self.role == "candidate":
            moved = [to_device(t, self.device) for t in inputs]
            result = self._forward(self.model, self._args(moved))
            store(result, outputs, convert=False)
            for view, m in zip(inputs, moved):
                copy_back(view, m)
        elif mode == 0:
            kept = "inputs_seed" in params  # the model may write to its inputs: not to the kept
            cast = [t.to(self.device, torch.float64, copy=kept) if t.is_floating_point() else
                    t.to(self.device, copy=kept) for t in self._inputs(inputs, params)]
            with float64_forward():
                result = self._forward(self.model64, self._args(cast))
            store(result, outputs, convert=True)
        elif mode == 1:
            seed = self._seed(params)
            torch.manual_seed(seed)
            made = [x for x in self.ref.get_inputs() if isinstance(x, torch.Tensor)]
            store(made, outputs, convert=False)
            if params.get("keep"):
                # as kcv received them: contiguous (their values, not get_inputs' own layout)
                self.kept[seed] = [x.detach().contiguous() for x in made]
        elif mode == 2:
            flags = (_tf32_flag(params, "cudnn_tf32"), _tf32_flag(params, "matmul_tf32"))
            args = self._args([t.to(self.device, copy=True) for t in self._inputs(inputs, params)])
            with tf32_flags(*flags):
                store(self._forward(self.model32, args), outputs, convert=True)
        elif mode == 3:
            self.kept.pop(self._seed(params), None)
        else:
            raise RequestError(f"params.mode: {mode} is not 0 (run), 1 (inputs), "
                               "2 (reference32) or 3 (forget kept inputs)")
