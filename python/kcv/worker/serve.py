"""The request loop of the Python worker (docs/06_worker_protocol.md §2).

hello, load, call, shutdown; one reply line per request, calls answered one at a time (the
worker does not advertise concurrent_calls: it runs calls sequentially, so kcv sends them one
after the other). A load may come again and replaces what was loaded, but candidate code can
change the whole process (patch torch, leave threads), so kcv starts one worker per candidate.
A reference load its problem refuses replies "reusable": true when the device is still usable
(_reusable_after): kcv sends the next shape's load to this process instead of starting another.
The worker ends with os._exit after "bye" or at end of input: a candidate's non-daemon threads
or atexit handlers cannot keep it alive. It also ends, with the loaded object's exit_status
(3), right after the reply to a call that left the CUDA device in a sticky error state
(kcv.worker.candidate): every later call of this process would fail.
"""

import gc
import json
import os
import platform
import sys

from kcv.worker.channel import Channel, clip
from kcv.worker.errors import LoadError, report, summary_line

PROTOCOL = 1
LOAD_KINDS = ("kernelbench", "pickle")
LOAD_ERROR_CLASSES = ("import_error", "compile_error", "init_error", "problem_error", "bad_request")


def _load(req: dict):
    kind = req.get("kind")
    if kind == "kernelbench":
        from kcv.worker import problem  # noqa: PLC0415 (torch is imported only when needed)

        return problem.load(req)
    if kind == "pickle":
        from kcv.worker import pickled  # noqa: PLC0415

        return pickled.load(req)
    raise LoadError(f"bad_request: kind: {kind!r} is not one of {list(LOAD_KINDS)}")


def _reusable_after(req: dict, e: LoadError) -> bool:
    """Whether this process can take another load after `e` (docs/06 §2): a reference load the
    problem refused (a shape its Model or get_inputs rejects) that left the device usable. Not
    after a candidate's load (its code may have changed the process), nor out of memory (what
    the failed load holds may not all be freed)."""
    if req.get("kind") != "kernelbench" or req.get("role") != "reference":
        return False
    if getattr(e, "cause", None) is not None:
        return False
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return True
    from kcv.worker.guards import device_error  # noqa: PLC0415 (torch is imported by now)

    return device_error(torch.cuda.synchronize) is None


class Server:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.loaded = None

    def error(self, message: str, **extra) -> None:
        self.channel.send({"type": "error", **extra, "message": clip(message)})

    def handle(self, line: str) -> bool:
        """Answers one request line; False after shutdown."""
        try:
            req = json.loads(line)
        except ValueError:
            req = None
        if not isinstance(req, dict) or not isinstance(req.get("type"), str):
            self.error('a request is not a JSON object with a string "type"')
            return True
        kind = req["type"]
        if kind == "shutdown":
            self.channel.send({"type": "bye"})
            return False
        if kind == "hello":
            self.hello(req)
        elif kind == "load":
            self.load(req)
        elif kind == "call":
            self.call(req)
        else:
            self.error(f"unknown request type '{kind}'")
        return True

    def hello(self, req: dict) -> None:
        version = req.get("protocol")
        if version != PROTOCOL:
            self.error(f"protocol {version} requested; kcv.worker speaks {PROTOCOL}")
            return
        self.channel.send({
            "type": "hello", "protocol": PROTOCOL, "pid": os.getpid(),
            "worker": f"kcv.worker (Python {platform.python_version()}, torch models)",
            "capabilities": {"load_kinds": list(LOAD_KINDS), "concurrent_calls": False}})

    def load(self, req: dict) -> None:
        self.loaded = None
        try:
            loaded = _load(req)
        except LoadError as e:
            # The failure's class (the message's first word: import_error, compile_error, ...) as
            # a field of its own, so kcv reads it without parsing the message (docs/06 §7.1).
            head = str(e).split(":", 1)[0]
            fields = {"class": head} if head in LOAD_ERROR_CLASSES else {}
            if getattr(e, "cause", None):
                fields["cause"] = e.cause
            if _reusable_after(req, e):
                fields["reusable"] = True
            self.error(str(e), **fields)
            return
        except BaseException as e:  # noqa: BLE001 (a bug of ours or a hostile import: say which)
            report(e, "load failed")
            self.error(f"error: load: {summary_line(e)}")
            return
        self.loaded = loaded
        # What the load made lives as long as the worker: out of the collector's sight, so a
        # collection scans only the objects the calls make (torch's and the model's are many).
        gc.freeze()
        self.channel.send({"type": "loaded", "name": loaded.name, "op": loaded.op,
                           "contract": None, **loaded.loaded_fields()})

    def call(self, req: dict) -> None:
        if self.loaded is None:
            self.error("call before a successful load", id=req.get("id"))
            return
        from kcv.worker.calls import serve_call  # noqa: PLC0415 (imports torch)

        self.channel.send(serve_call(self.loaded, req))
        status = getattr(self.loaded, "exit_status", None)
        if status:  # the device is broken (a sticky CUDA error): the reply said so; a fresh
            sys.stderr.flush()  # process is the only way on
            os._exit(status)


def main(channel: Channel) -> int:
    import faulthandler  # noqa: PLC0415

    faulthandler.enable(file=sys.stderr)  # a crash leaves its Python stack in the stderr tail
    server = Server(channel)
    for line in channel.requests():
        if not server.handle(line):
            break
    sys.stderr.flush()
    os._exit(0)
