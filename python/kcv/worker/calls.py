"""One call request: map the file, make the views, run the loaded thing, word the result.

Statuses (docs/06_worker_protocol.md §4): "ok"; "bad_output" when the result does not fit the
outputs (kcv.worker.outputs says how); "exception" with the exception's last traceback line
(prefixed "compile_error: " when it came from a native build) for anything the candidate raised,
SystemExit included. A request kcv should not have sent (a view outside its region, a wrong
input count, an unknown mode) gets an error reply instead, which kcv treats as a broken worker.

The mapping is closed before the reply is written (kcv.worker.shm: later access through a kept
view faults). The tensor objects of the last 64 calls are kept alive (their memory is gone,
they are never read), so a result cached by id() cannot see a repeated id within 64 calls.
"""

import collections
import sys

import torch

from kcv.worker.channel import clip
from kcv.worker.errors import RequestError, from_build, last_line, report
from kcv.worker.outputs import BadOutput
from kcv.worker.shm import CallFile
from kcv.worker.views import make_view

_KEEP_CALLS = 64
_previous = collections.deque(maxlen=_KEEP_CALLS)  # recent calls' view objects (see above)


def _mode(params: dict) -> int:
    mode = params.get("mode", 0)
    if not isinstance(mode, (int, float)) or isinstance(mode, bool) or mode != int(mode):
        raise RequestError(f"params.mode: {mode!r} is not an integer")
    return int(mode)


def _run(loaded, req: dict, inputs: list, outputs: list) -> dict:
    params = req.get("params") or {}
    if not isinstance(params, dict):
        raise RequestError("params: not a JSON object")
    mode = _mode(params)
    try:
        loaded.call(mode, inputs, outputs, params)
    except (RequestError, BadOutput):
        raise
    except BaseException as e:  # noqa: BLE001 (candidate code may raise anything, SystemExit too)
        report(e, f"call {req.get('id')} raised")
        message = last_line(e)
        if from_build(e):
            message = "compile_error: " + message
        return {"status": "exception", "message": clip(message)}
    return {"status": "ok"}


def serve_call(loaded, req: dict) -> dict:
    """The reply to one call request."""
    reply = {"type": "result", "id": req.get("id")}
    try:
        shm = req.get("shm")
        if not isinstance(shm, dict):
            raise RequestError("shm: not a JSON object")
        file = CallFile(shm.get("path"), shm.get("size"))
    except (RequestError, ValueError, OSError) as e:
        return {"type": "error", "id": req.get("id"), "message": clip(f"call request: {e}")}
    try:
        base = torch.frombuffer(file.buffer(), dtype=torch.uint8)
        lists = [req.get(k) for k in ("inputs", "outputs")]
        if not all(isinstance(x, list) for x in lists):
            raise RequestError("inputs/outputs: not JSON arrays")
        inputs = [make_view(base, d) for d in lists[0]]
        outputs = [make_view(base, d) for d in lists[1]]
        _previous.append(inputs + outputs)
        reply.update(_run(loaded, req, inputs, outputs))
    except BadOutput as e:
        reply.update(status="bad_output", message=clip(str(e)))
    except (RequestError, ValueError) as e:
        reply = {"type": "error", "id": req.get("id"), "message": clip(f"call request: {e}")}
    finally:
        base = inputs = outputs = None  # noqa: F841 (drop our references before unmapping)
        file.close()
        sys.stderr.flush()
    return reply
