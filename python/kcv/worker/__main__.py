"""`python -m kcv.worker`: the Python worker process of docs/06_worker_protocol.md.

The protocol's streams are moved off fds 0 and 1 before anything else is imported, so nothing
printed by an import (or later by candidate code) can reach kcv as a reply.
"""

from kcv.worker.channel import protect

_channel = protect()

from kcv.worker.serve import main  # noqa: E402 (after protect(), deliberately)

main(_channel)
