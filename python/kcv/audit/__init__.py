"""kcv.audit: the trusted orchestrator of `kcv audit` (docs/08_audit.md).

It reads KernelBench-style corpora, runs every kernel's reference and candidate in separate
worker processes (kcv.worker, driven through kcv._core.Worker), judges the outputs with the C++
gate judges (kcv._core.judge) under an error model calibrated on eager fp32 (error_model.py),
runs a faithful replica of KernelBench's own check (replica.py) for the differential, and records
everything in the resumable SQLite store (kcv._core.Store). Nothing here imports candidate or
reference code. Modules: session (the worker pair), battery (the probes and gates), rescale,
error_model, replica, verdicts, statuses, kernel (one kernel), orchestrator (the slots),
progress."""
