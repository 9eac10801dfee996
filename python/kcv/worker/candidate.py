"""The candidate role's tasks, run and describe (docs/06_worker_protocol.md §7.3-7.4), for
either load kind: CandidateSide wraps the callable (ModelNew, or a pickled function).

A run: the inputs (on the CPU the call's views themselves, so an in-place write lands in kcv's
bytes; on CUDA device copies with their layout, between guard bands when device_guard > 0),
the seed set right before the forward, the forward `concurrency` times at once (CUDA: one
stream each, launched back to back; CPU: one thread each, released together by a barrier),
every Triton autotuner pinned to one config when autotune_config >= 0, and empty factories
poisoned when the task gives patterns. Run j's outputs go into the j-th block of the call's
output views. Then the device is synchronized (all streams), inputs copied back over the views,
guard bands compared (the reply's device_guards), and the outputs stored; the candidate's
results must match the views' dtypes and shapes exactly. The reply's forward_s is the seconds of
the forwards and that synchronize (kcv's timings split the task with it; never evidence).

Dispatch modes are thread-local, so the poison mode and no_grad are entered inside each
thread. After an exception on CUDA, after_exception() checks the device: a failing
synchronize means a sticky error, the reply says so and the worker exits with status 3 after
sending it (kcv.worker.serve), so kcv's next call gets a fresh process.
"""

import contextlib
import threading
import time

import torch

from kcv.worker import autotune, guards
from kcv.worker.devicecode import device_code
from kcv.worker.devices import copy_back, to_device
from kcv.worker.errors import RequestError
from kcv.worker.outputs import BadOutput, store
from kcv.worker.poison import Poison
from kcv.worker.tasks import CANDIDATE_KINDS

_sync = torch.cuda.synchronize  # bound before candidate code could replace it
STICKY_EXIT_STATUS = 3


class CandidateSide:
    """Serves run and describe for `fn` (ModelNew or a callable) on `device`.
    `namespace`: the candidate module's globals (its Triton objects); `extensions_dir`: its
    TORCH_EXTENSIONS_DIR; `args_of(tensors)`: the call's argument list from its tensors."""

    kinds = CANDIDATE_KINDS

    def __init__(self, fn, device: str, namespace: dict, extensions_dir: str | None, args_of):
        self.fn, self.device = fn, device
        self.namespace, self.extensions_dir = namespace, extensions_dir
        self.args_of = args_of
        self.autotuners = autotune.find_autotuners(namespace)
        self.exit_status = None  # set when the device is broken: serve exits after the reply

    def loaded_fields(self) -> dict:
        # triton_kernels: how many Triton kernel objects the module defines; under the Triton
        # interpreter (not thread-safe) kcv does not run such a module's calls concurrently.
        return {"autotuners": autotune.describe(self.autotuners),
                "triton_kernels": len(autotune.triton_objects(self.namespace))}

    def serve(self, task, inputs: list, outputs: list, kwargs: dict) -> dict | None:
        if task.kind == "describe":
            if inputs or outputs:
                raise RequestError("inputs/outputs: a describe task carries none")
            return {"device_code": device_code(self.namespace, self.extensions_dir)}
        return self._run(task, inputs, outputs, kwargs)

    def _run(self, task, inputs: list, outputs: list, kwargs: dict) -> dict | None:
        k = task.concurrency
        if len(outputs) % k:
            raise RequestError(f"task.concurrency: {len(outputs)} output view(s) are not "
                               f"{k} copies of the model's outputs")
        n = len(outputs) // k
        cuda = self.device == "cuda"
        guarded = guards.guarded_copies(inputs, self.device, task.device_guard, task.guard_seed,
                                        task.device_offset) \
            if cuda and (task.device_guard > 0 or task.device_offset > 0) else None
        if task.fresh_inputs:  # KernelBench's own conditions: tensors of their own storage
            moved = [v.to(self.device, copy=True).contiguous() for v in inputs]
        else:
            moved = [g.tensor if g is not None else to_device(v, self.device)
                     for g, v in zip(guarded or [None] * len(inputs), inputs)]
        args = self.args_of(moved)
        block = guards.shuffle_block(task.shuffle_seed, self.device) \
            if cuda and task.shuffle_seed is not None else None
        t0 = time.perf_counter()
        try:
            with autotune.only_config(self.autotuners, task.autotune_config):
                torch.manual_seed(task.seed)
                results = self._forwards(args, kwargs, k, task.poison)
            if cuda:
                _sync()  # every stream: side-stream work is finished before the copies
        finally:
            del block
        extra = {"forward_s": time.perf_counter() - t0}  # a timing, never evidence
        for view, m in zip(inputs, moved):
            copy_back(view, m)
        if guarded is not None:
            report = guards.changed(guarded)
            if report:
                extra["device_guards"] = report
        try:
            for j, result in enumerate(results):
                store(result, outputs[j * n:(j + 1) * n], convert=False)
        except BadOutput as e:
            e.extra = extra
            raise
        return extra

    def _one(self, args, kwargs, poison):
        with torch.no_grad(), Poison(poison) if poison else contextlib.nullcontext():
            return self.fn(*args, **kwargs)

    def _forwards(self, args, kwargs, k: int, poison: dict) -> list:
        if k == 1:
            return [self._one(args, kwargs, poison)]
        if self.device == "cuda":
            current = torch.cuda.current_stream()
            results = []
            for _ in range(k):
                stream = torch.cuda.Stream()
                stream.wait_stream(current)
                with torch.cuda.stream(stream):
                    results.append(self._one(args, kwargs, poison))
            return results
        return self._threads(args, kwargs, k, poison)

    def _threads(self, args, kwargs, k: int, poison: dict) -> list:
        results, errors = [None] * k, [None] * k
        barrier = threading.Barrier(k)

        def work(j):
            try:
                barrier.wait()
                results[j] = self._one(args, kwargs, poison)
            except BaseException as e:  # noqa: BLE001 (re-raised on the serving thread)
                errors[j] = e

        threads = [threading.Thread(target=work, args=(j,), name=f"kcv-run-{j}", daemon=True)
                   for j in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            if e is not None:
                raise e
        return results

    def after_exception(self) -> str:
        """The text to add to an exception reply: on CUDA, whether the device survived."""
        if self.device != "cuda":
            return ""
        broken = guards.device_error(_sync)
        if broken is None:
            return ""
        self.exit_status = STICKY_EXIT_STATUS
        return (f"; then torch.cuda.synchronize() failed too ({broken}): the device is in a "
                f"sticky error state, the worker exits with status {STICKY_EXIT_STATUS} after "
                "this reply")
