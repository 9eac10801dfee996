"""`python -m kcv.worker [--gpu ID] [--threads N]`: the Python worker process of
docs/06_worker_protocol.md.

The protocol's streams are moved off fds 0 and 1 before anything else is imported, so nothing
printed by an import (or later by candidate code) can reach kcv as a reply. --gpu and --threads
(kcv.audit.workers.worker_command) become CUDA_VISIBLE_DEVICES and the CPU thread pools' sizes
before torch is imported, which is when they take effect; --threads also caps the compile jobs
of the worker's torch extension builds (MAX_JOBS, ninja's -j), so --jobs workers building at
once share the cores as their thread pools do.
"""

import os
import sys

from kcv.worker.channel import protect

_channel = protect()


def _environment(argv: list[str]) -> None:
    options = {"--gpu": ("CUDA_VISIBLE_DEVICES",),
               "--threads": ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MAX_JOBS")}
    k = 0
    while k < len(argv):
        names = options.get(argv[k])
        if names is None or k + 1 >= len(argv):
            sys.exit(f"kcv.worker: unknown argument {argv[k]!r} (known: --gpu ID, --threads N)")
        for name in names:
            os.environ[name] = argv[k + 1]
        k += 2


_environment(sys.argv[1:])

from kcv.worker.serve import main  # noqa: E402 (after protect() and the environment, deliberately)

main(_channel)
