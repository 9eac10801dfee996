"""The Python worker (`python -m kcv.worker`): runs untrusted torch/Triton candidates and the
KernelBench reference for the trusted orchestrator over the protocol of
docs/06_worker_protocol.md. Nothing here is imported by the trusted side."""
