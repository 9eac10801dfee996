"""The worker pair of one kernel: a trusted reference worker and a candidate worker.

Both are `python -m kcv.worker` processes driven through kcv._core.Worker (docs/06): this
process never imports reference or candidate code, it only sends inputs and reads audited
outputs. The reference worker runs Model in float64 (mode 0), draws get_inputs under a seed
(mode 1) and runs Model in float32 eager (mode 2); the candidate worker runs ModelNew (mode 0).
The reference worker keeps the inputs it draws (mode 1 with "keep") until told to forget them
(mode 3), so its float64 and float32 runs of a seed name the seed ("inputs_seed") instead of
receiving the inputs again through fresh shared memory: gigabytes per run for the large problems.

Time is bounded twice. The workers' load (imports and compiles: a load_inline build under
contention can take minutes) is bounded by the load deadline; a load that runs past it raises
LoadTimeout. Everything after the load (warm-up, replica, battery) is bounded by the kernel
deadline, which the caller sets once the load is done (Limits.start_running). Every start and
call gets the smaller of its own limit and what is left of its deadline, and a passed deadline
raises KernelTimeout, so neither timeout needs a thread to kill anything.
Load failures become LoadFailure(status, message) with the audit status they map to."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from kcv.audit import statuses

# numpy dtype of each protocol dtype name (bf16 travels as its uint16 bit pattern).
NUMPY_DTYPE = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.uint16,
    "i32": np.int32,
    "i64": np.int64,
    "bool": np.bool_,
}
FLOAT_DTYPES = ("f64", "f32", "f16", "bf16")


class KernelTimeout(Exception):
    """The kernel's deadline passed; what was judged so far is kept."""


class LoadTimeout(KernelTimeout):
    """A worker's load (imports, compiles) ran past the load deadline."""


class LoadFailure(Exception):
    """A worker failed to start or load; `status` is the audit status it maps to."""

    def __init__(self, role: str, status: str, message: str):
        super().__init__(f"{role}: {message}")
        self.role = role
        self.status = status
        self.message = message


class ReferenceFailure(Exception):
    """The trusted reference itself failed on a probe (not the candidate's fault); `status`:
    the failed call's (crash, timeout, bad_output, ...), where a call failed."""

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        self.status = status


def worker_command(gpu: str | None = None, threads: int | None = None) -> list[str]:
    """argv of a Python worker: this interpreter, so the worker sees the same kcv and torch.
    `gpu`: the one GPU id the worker sees (CUDA_VISIBLE_DEVICES); `threads`: its CPU thread
    pools' size (OMP_NUM_THREADS, MKL_NUM_THREADS: a dozen workers each sized to the whole host
    oversubscribe its cores while they draw get_inputs on the CPU). kcv.worker's __main__ sets
    both before it imports torch."""
    cmd = [sys.executable, "-m", "kcv.worker"]
    if gpu is not None:
        cmd += ["--gpu", str(gpu)]
    if threads is not None:
        cmd += ["--threads", str(int(threads))]
    return cmd


@dataclass
class Limits:
    deadline: float  # time.monotonic() by which the kernel must be done
    call_timeout_s: float = 60.0
    memory_limit_bytes: int = 0
    load_deadline: float | None = None  # by which the loads must be done (None: deadline)
    load_timeout_s: float | None = None  # for the message of a load that runs out

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def load_remaining_s(self) -> float:
        end = self.deadline if self.load_deadline is None else self.load_deadline
        return end - time.monotonic()

    def start_running(self, kernel_timeout_s: float):
        """The load is done: from now on the kernel has kernel_timeout_s seconds."""
        self.deadline = time.monotonic() + kernel_timeout_s

    def budget_ms(self, limit_s: float) -> int:
        left = self.remaining_s()
        if left <= 0:
            raise KernelTimeout("the kernel's time limit ran out")
        return max(1, int(1000 * min(limit_s, left)))


@dataclass
class Problem:
    """What the reference worker's load reply says about the problem (Interface B)."""

    inputs: list[dict]  # {"kind": "tensor", "dtype", "shape"} | {"kind": "scalar", "value"}
    outputs: list[dict]  # {"dtype", "shape"}
    constants: dict = field(default_factory=dict)
    sized_on_meta: bool = False  # only sized: the reference worker built and ran nothing

    @staticmethod
    def from_reply(reply: dict) -> "Problem":
        p = reply.get("problem")
        if not isinstance(p, dict):
            raise ValueError("the reference worker's load reply has no 'problem' object")
        return Problem(inputs=list(p.get("inputs", [])), outputs=list(p.get("outputs", [])),
                       constants=dict(p.get("constants", {}) or {}),
                       sized_on_meta=p.get("sized_on_meta") is True)

    def tensor_inputs(self) -> list[dict]:
        return [i for i in self.inputs if i.get("kind") == "tensor"]


def kernelbench_load(row: dict, role: str, *, device: str, cache_dir: str | None,
                     constants: dict | None = None, seed: int = 42) -> dict:
    load = {"kind": "kernelbench", "role": role, "reference_code": row["reference_code"],
            "seed": seed, "device": device}
    if role == "candidate":
        load["candidate_code"] = row["candidate_code"]
    if cache_dir:
        load["cache_dir"] = cache_dir
    if constants:
        load["constants"] = dict(constants)
    return load


def tensor_bytes(specs) -> int:
    """Bytes of tensors described as {"dtype", "shape"} (the problem description's form)."""
    total = 0
    for t in specs:
        n = 1
        for d in t["shape"]:
            n *= int(d)
        total += n * np.dtype(NUMPY_DTYPE.get(t["dtype"], np.float64)).itemsize
    return total


def output_spec(name: str, dtype: str, shape) -> tuple:
    """Worker.run's output description: (dtype, shape); `name` only documents the call site."""
    del name
    return (dtype, tuple(int(s) for s in shape))


def run_call(worker, inputs, outputs, *, timeout_ms: int, mode: int, extra_params=None, **opts):
    """One Worker.run with the audit's params convention (params["mode"])."""
    params = {"mode": float(mode)}
    params.update(extra_params or {})
    return worker.run(inputs, outputs, params=params, timeout_ms=timeout_ms, **opts)


class ProblemSession:
    """The two workers of one kernel at one set of module constants (the reference shape, or
    a rescaled one), with memoised inputs and reference values per seed."""

    def __init__(self, row: dict, limits: Limits, *, device: str = "auto",
                 cache_dir: str | None = None, constants: dict | None = None, label: str = "",
                 gpu: str | None = None, threads: int | None = None, size_on_meta_over: int = 0):
        self.row = row
        # > 0: the reference sizes the problem on meta first and, over this many bytes of inputs
        # + outputs, only sizes it (Problem.sized_on_meta): the pair then serves no call.
        self.size_on_meta_over = size_on_meta_over
        self.gpu = gpu
        self.threads = threads
        self.limits = limits
        self.device = device
        self.cache_dir = cache_dir
        self.constants = constants
        self.label = label or "reference shape"
        self.reference = None
        self.candidate = None
        self.problem: Problem | None = None
        self.on_cpu = device == "cpu"
        self._helper = None  # the thread that spawned the candidate worker (start_both)
        self._inputs: dict[int, list] = {}
        # Seeds whose inputs and reference runs are memoised (the battery's): the replica's other
        # trials would otherwise keep their eager outputs for the whole kernel.
        self.keep_seeds: set[int] = set()
        # Seeds whose inputs the reference worker keeps -> its workers_started when drawn (a
        # restarted worker keeps nothing: its runs get the inputs sent again).
        self._drawn: dict[int, int] = {}
        self._ref64: dict[int, list] = {}
        self._ref32: dict[tuple, list] = {}
        # Wall seconds per kind of worker request (the audit's --timings breakdown): starts,
        # get_inputs draws, float64 and float32 reference runs, candidate calls. Calls made
        # side by side (Battery._beside) each count their own wall time.
        self.costs: dict[str, float] = {}

    # -- starting ----------------------------------------------------------------------------

    def _count(self, kind: str, t0: float):
        self.costs[kind] = self.costs.get(kind, 0.0) + (time.monotonic() - t0)

    def _start(self, role: str):
        t0 = time.monotonic()
        try:
            return self._start_worker(role)
        finally:
            self._count(f"start_{role}", t0)

    def _start_worker(self, role: str):
        from kcv import _core

        name = f"{role}:{self.row['id']}"
        load = kernelbench_load(self.row, role, device=self.device, cache_dir=self.cache_dir,
                                constants=self.constants)
        if role == "reference" and self.size_on_meta_over:
            load["size_on_meta_over"] = int(self.size_on_meta_over)
        load["kernel"] = name  # the worker echoes it; the executor checks the echo
        left = self.limits.load_remaining_s()
        if left <= 0:
            raise self._load_timeout(role, "no time left to start it")
        startup_ms = max(1, int(1000 * left))
        worker = _core.Worker(worker_command(self.gpu, self.threads), load, name=name,
                              memory_limit_bytes=self.limits.memory_limit_bytes,
                              startup_timeout_ms=startup_ms)
        try:
            info = worker.start()
        except RuntimeError as e:
            worker.close()
            msg = str(e)
            if self.limits.load_remaining_s() <= 0:
                raise self._load_timeout(role, msg) from e
            raise LoadFailure(role, statuses.status_of_load_error(msg), msg) from e
        return worker, info

    def _load_timeout(self, role: str, msg: str) -> LoadTimeout:
        s = self.limits.load_timeout_s
        bound = f"{s:g} s" if s is not None else "the kernel's time limit"
        return LoadTimeout(f"{role} worker ({self.label}): load (compile) took longer than "
                           f"{bound}: {msg}")

    def start_reference(self) -> Problem:
        self.reference, info = self._start("reference")
        reply = info.get("reply") or {}
        if str(reply.get("device", "")).startswith("cpu"):
            self.on_cpu = True
        try:
            self.problem = Problem.from_reply(info.get("reply") or {})
        except ValueError as e:
            raise LoadFailure("reference", "error", str(e)) from e
        if not self.problem.outputs:
            raise LoadFailure("reference", "error", "the reference returns no tensor output")
        return self.problem

    def start_candidate(self):
        self.candidate, _ = self._start("candidate")

    def start_both(self) -> Problem:
        """Starts both workers at once (a start mostly waits on its worker: imports, compiles;
        Worker.start releases the GIL). A reference failure wins over a candidate failure.
        The candidate is spawned on a helper thread that lives until close(): workers die with
        the thread that spawned them (PR_SET_PDEATHSIG is per thread)."""
        self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kcv-start")
        future = self._helper.submit(self._start, "candidate")
        try:
            problem = self.start_reference()
        finally:
            try:
                self.candidate = future.result()[0]
                candidate_error = None
            except BaseException as e:  # noqa: BLE001 - re-raised below, after the reference's
                candidate_error = e
        if candidate_error is not None:
            raise candidate_error
        return problem

    def close(self):
        for w in (self.candidate, self.reference):
            if w is not None:
                try:
                    w.close()
                except Exception:  # noqa: BLE001 - closing must never mask the verdicts
                    pass
        self.candidate = self.reference = None
        if self._helper is not None:
            self._helper.shutdown(wait=True)
            self._helper = None

    # -- reference side ----------------------------------------------------------------------

    def _reference_call(self, what: str, inputs, outputs, mode: int, extra=None):
        t0 = time.monotonic()
        rec = run_call(self.reference, inputs, outputs, mode=mode, extra_params=extra,
                       timeout_ms=self.limits.budget_ms(self.limits.call_timeout_s))
        self._count(("ref_f64", "ref_inputs", "ref_f32", "ref_forget")[mode], t0)
        if rec.status != "ok":
            # The executor may have killed the worker (it restarts at the next call, so
            # workers_started has not moved yet): trust no kept seed, send the inputs again.
            self._drawn.clear()
            if rec.status == "timeout" and self.limits.remaining_s() <= 0:
                raise KernelTimeout(f"reference {what}: {rec.message}")
            raise ReferenceFailure(f"reference {what} ({self.label}): {rec.status}: {rec.message}",
                                   rec.status)
        return rec.take_outputs()

    def inputs(self, seed: int) -> list[tuple[str, np.ndarray]]:
        """get_inputs() under torch.manual_seed(seed), drawn by the reference worker, which keeps
        them for its runs keyed by this seed (it keeps the seeds in keep_seeds and the last one
        drawn). Only the seeds in keep_seeds are memoised here (a KernelBench input can be
        gigabytes)."""
        # Before the memo: the battery's memoised seeds come after the replica's last trial,
        # whose inputs the worker would otherwise keep for the rest of the kernel.
        for old in [s for s in self._drawn if s != seed and s not in self.keep_seeds]:
            self._forget_in_worker(old)
        if seed in self._inputs:
            return self._inputs[seed]
        specs = [output_spec(f"input.{k}", t["dtype"], t["shape"])
                 for k, t in enumerate(self.problem.tensor_inputs())]
        arrays = self._reference_call(f"get_inputs(seed={seed})", [], specs, mode=1,
                                      extra={"seed": float(seed), "keep": 1.0}) if specs else []
        if specs:
            self._drawn[seed] = self.reference.workers_started
        made = [(f"input.{k}", a) for k, a in enumerate(arrays)]
        if seed in self.keep_seeds:
            self._inputs[seed] = made
        return made

    def _kept_by_worker(self, key) -> bool:
        return (key is not None and key in self._drawn
                and self._drawn[key] == self.reference.workers_started)

    def _trusted_run(self, what: str, inputs, key, specs, mode: int, extra=None):
        """A float64 or float32 run: on the seed's kept inputs when the worker keeps them, else
        on `inputs` sent. A worker that died since the draw (killed after a failed call, or by
        the host) keeps nothing: then once more, sent. Either this very call restarted it, or
        (the host's kill still tearing the process down when the call went out) the call died
        with it, and the next call restarts it."""
        sent, params = self._run_inputs(inputs, key, extra)
        if params is extra:  # inputs sent
            return self._reference_call(what, sent, specs, mode=mode, extra=params)
        started = self.reference.workers_started
        try:
            return self._reference_call(what, sent, specs, mode=mode, extra=params)
        except ReferenceFailure as e:
            if self.reference.workers_started == started and e.status != "crash":
                raise
        return self._reference_call(what, inputs, specs, mode=mode, extra=extra)

    def _run_inputs(self, inputs, key, extra=None) -> tuple[list, dict | None]:
        """What a run of the reference worker sends: nothing but the seed when the worker keeps
        that seed's inputs (`key`: the seed `inputs` were drawn for), else the inputs."""
        if not self._kept_by_worker(key):
            return inputs, extra
        return [], {**(extra or {}), "inputs_seed": float(key)}

    def _forget_in_worker(self, seed: int):
        """Tells the reference worker to drop a seed's inputs (mode 3). Best effort: a worker
        that died kept nothing, and no time left means no more runs to save."""
        if not self._kept_by_worker(seed):
            self._drawn.pop(seed, None)
            return
        del self._drawn[seed]
        try:
            self._reference_call(f"forget(seed={seed})", [], [], mode=3,
                                 extra={"seed": float(seed)})
        except (ReferenceFailure, KernelTimeout):
            pass

    def input_bytes(self) -> int:
        """Bytes of one set of tensor inputs (from the reference's problem description)."""
        return tensor_bytes(self.problem.tensor_inputs())

    def output_bytes(self) -> int:
        """Bytes of one set of outputs in their own dtypes."""
        return tensor_bytes(self.problem.outputs)

    def _f64_specs(self):
        return [output_spec(f"output.{k}", "f64", o["shape"]) for k, o in enumerate(self.problem.outputs)]

    def reference64(self, inputs, key=None) -> list[np.ndarray]:
        """Model in float64 on these inputs (the oracle value). `key`: the seed `inputs` were
        drawn for (inputs(key)), or None; the run is memoised under it when it is one of
        keep_seeds, and the worker runs on its own copy of them when it keeps them."""
        if key is not None and key in self._ref64:
            return self._ref64[key]
        out = self._trusted_run("float64 run", inputs, key, self._f64_specs(), mode=0)
        if key is not None and key in self.keep_seeds:
            self._ref64[key] = out
        return out

    def forget(self, seed: int):
        """Drops what is memoised for a seed (its inputs and reference runs), here and in the
        reference worker: the battery is done with it, and its arrays should not outlive its
        probes."""
        if seed in self._drawn:
            self._forget_in_worker(seed)
        self._inputs.pop(seed, None)
        self._ref64.pop(seed, None)
        for k in [k for k in self._ref32 if k[0] == seed]:
            del self._ref32[k]

    def _eager_specs(self):
        """Eager fp32 outputs travel as f32 (exact for f32, f16 and bf16 outputs: half the bytes
        of f64, which the replica and every probe's calibration hold), others as f64."""
        return [output_spec(f"output.{k}", "f32" if o["dtype"] in ("f32", "f16", "bf16") else "f64",
                            o["shape"]) for k, o in enumerate(self.problem.outputs)]

    def reference32(self, inputs, key=None, tf32=(0, 0)) -> list[np.ndarray]:
        """Model in float32 eager on these inputs, as f32 (or f64) arrays, with torch.backends' TF32
        flags tf32 = (cudnn_tf32, matmul_tf32) for this call (default: both off). TF32 exists
        only on CUDA: on the CPU every flag set is the flags-off run, made once. `key` as in
        reference64; memoised per (key, flags) when key is one of keep_seeds."""
        flags = (0, 0) if self.on_cpu else (int(tf32[0]), int(tf32[1]))
        k = (key, flags)
        if key is not None and k in self._ref32:
            return self._ref32[k]
        extra = ({"cudnn_tf32": float(flags[0]), "matmul_tf32": float(flags[1])}
                 if flags != (0, 0) else None)
        out = self._trusted_run("float32 run", inputs, key, self._eager_specs(), mode=2,
                                extra=extra)
        if key is not None and key in self.keep_seeds:
            self._ref32[k] = out
        return out

    # -- candidate side ----------------------------------------------------------------------

    def output_specs(self):
        return [output_spec(f"output.{k}", o["dtype"], o["shape"]) for k, o in enumerate(self.problem.outputs)]

    def run_candidate(self, inputs, **opts):
        """One audited candidate call (mode 0); a CallRecord whatever the candidate does."""
        t0 = time.monotonic()
        try:
            return run_call(self.candidate, inputs, self.output_specs(), mode=0,
                            timeout_ms=self.limits.budget_ms(self.limits.call_timeout_s), **opts)
        finally:
            self._count("candidate", t0)
