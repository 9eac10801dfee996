"""kcv.audit: the trusted orchestrator of `kcv audit` (docs/08_audit.md).

It reads KernelBench-style corpora into the resumable SQLite store (kcv._core.Store), schedules
kernels over parallel slots, host memory and GPUs, and hands each kernel to
kcv._core.verify_module, the C++ pipeline that makes every verdict (src/kernelbench). Nothing
here imports candidate or reference code, nor judges anything. Modules: workers (the worker
command), sizing and reduced/rescale (the shape a kernel is judged at), memory and gpus
(admission), kernel (one kernel), orchestrator (the slots), parallel (--procs), progress."""
