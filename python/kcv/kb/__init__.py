"""KernelBench support: loading a reference/candidate pair inside a worker (problem.py)."""
