"""One call request: map the file, make the views, check the task, run it, word the result.

Statuses (docs/06_worker_protocol.md §4): "ok"; "bad_output" when the result does not fit the
outputs (kcv.worker.outputs says how); "exception" with the exception's last traceback line
(prefixed "compile_error: " when it came from a native build) for anything the model raised,
SystemExit included. A request kcv should not have sent (a view outside its region, a wrong
input count, a task that is malformed, of an unknown kind or of the other role, params where a
task call has none) gets an error reply instead, which kcv treats as a broken worker.

The call's task (kcv.worker.tasks) goes to the loaded object's call(task, inputs, outputs,
kwargs), which may return a dict of extra reply fields (describe's device_code, run's
device_guards); a BadOutput may carry such fields too (`extra`). After an exception the loaded
object's after_exception() may add to the message (the CUDA sticky-error check) and set its
exit_status, which kcv.worker.serve acts on once the reply is sent.

Every result of a task that ran carries task_s, the seconds inside the loaded object's call
(kcv's timings split a call's round trip with it, docs/06 §4; a timing, never evidence).

The mapping is closed before the reply is written (kcv.worker.shm: later access through a kept
view faults). The tensor objects of the last 64 calls are kept alive (their memory is gone,
they are never read), so a result cached by id() cannot see a repeated id within 64 calls.
"""

import collections
import sys
import time

import torch

from kcv.worker.channel import clip
from kcv.worker.errors import RequestError, cause_of, cuda_visible, from_build, summary_line, report
from kcv.worker.outputs import BadOutput
from kcv.worker.shm import CallFile
from kcv.worker.tasks import check_params, parse
from kcv.worker.views import make_view

_KEEP_CALLS = 64
_previous = collections.deque(maxlen=_KEEP_CALLS)  # recent calls' view objects (see above)


def checked_task(loaded, req: dict):
    """(task, kwargs) of a call request for `loaded`; RequestError when kcv sent a bad one."""
    kwargs = check_params(req.get("params"), allow=bool(getattr(loaded, "pass_params", False)))
    task = parse(req.get("task"))
    kinds = getattr(loaded, "kinds", ())
    if task.kind not in kinds:
        role = getattr(loaded, "role", "?")
        raise RequestError(f"task.kind: {task.kind!r} is not served by the {role} role (it "
                           f"serves {', '.join(kinds) or 'nothing'})")
    return task, kwargs


def _run(loaded, req: dict, task, kwargs: dict, inputs: list, outputs: list) -> dict:
    t0 = time.perf_counter()
    try:
        extra = loaded.call(task, inputs, outputs, kwargs)
    except BadOutput as e:
        e.extra = {**getattr(e, "extra", {}), "task_s": time.perf_counter() - t0}
        raise
    except RequestError:
        raise
    except BaseException as e:  # noqa: BLE001 (candidate code may raise anything, SystemExit too)
        report(e, f"call {req.get('id')} raised")
        message = summary_line(e)
        if from_build(e):
            message = "compile_error: " + message
        hook = getattr(loaded, "after_exception", None)
        message += hook() if hook is not None else ""
        result = {"status": "exception", "message": clip(message),
                  "task_s": time.perf_counter() - t0}
        cause = cause_of(e, cuda_visible=cuda_visible())
        if cause:
            result["cause"] = cause
        return result
    return {"status": "ok", **(extra or {}), "task_s": time.perf_counter() - t0}


def serve_call(loaded, req: dict) -> dict:
    """The reply to one call request."""
    reply = {"type": "result", "id": req.get("id")}
    try:
        shm = req.get("shm")
        if not isinstance(shm, dict):
            raise RequestError("shm: not a JSON object")
        task, kwargs = checked_task(loaded, req)
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
        reply.update(_run(loaded, req, task, kwargs, inputs, outputs))
    except BadOutput as e:
        reply.update(status="bad_output", message=clip(str(e)), **getattr(e, "extra", {}))
    except (RequestError, ValueError) as e:
        reply = {"type": "error", "id": req.get("id"), "message": clip(f"call request: {e}")}
    finally:
        base = inputs = outputs = None  # noqa: F841 (drop our references before unmapping)
        file.close()
        sys.stderr.flush()
    return reply
