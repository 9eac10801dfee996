"""A small protocol client for testing `python -m kcv.worker` without kcv._core.

It plays kcv's part of docs/06_worker_protocol.md: starts the worker in its own session (with an
optional RLIMIT_AS), sends hello/load/call/shutdown lines, and for each call writes a fresh
safetensors-style file in /dev/shm laid out as kcv lays it out: per buffer a 64-byte front
guard, the storage (strided views, padding and storage offsets included), a 64-byte back guard,
each region 64-byte aligned; outputs poisoned with a NaN-like sentinel. After the reply it reads
the file back: the outputs, and whether every input byte (guards and padding too) is unchanged.
Calls carry a typed task (docs/06_worker_protocol.md §7.3); the helpers below build them.
Tensors are torch tensors of the test process, which candidate code never touches.
"""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import torch

REPO_PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
         torch.bfloat16: "bf16", torch.int32: "i32", torch.int64: "i64", torch.bool: "bool"}
GUARD = 64
GUARD_BYTE = 0xA5
POISON_BYTE = 0x7F  # every output byte 0x7F: a NaN pattern for f16/bf16/f32/f64
RUN = {"kind": "run", "seed": 0}


@dataclass
class Arg:
    """An input as kcv would send it: `storage` (1-D) viewed with shape/strides/offset."""
    storage: torch.Tensor
    shape: tuple
    strides: tuple
    offset: int = 0

    @staticmethod
    def of(t: torch.Tensor) -> "Arg":
        t = t.contiguous()
        return Arg(t.reshape(-1).clone(), tuple(t.shape), tuple(t.stride()), 0)

    def value(self) -> torch.Tensor:
        return self.storage.as_strided(self.shape, self.strides, self.offset)


@dataclass
class Call:
    reply: dict
    outputs: list = field(default_factory=list)
    inputs_unchanged: list = field(default_factory=list)


class WorkerClient:
    def __init__(self, memory_limit: int = 0, env: dict | None = None, args: tuple = ()):
        e = dict(os.environ)
        e["PYTHONPATH"] = REPO_PYTHON + os.pathsep + e.get("PYTHONPATH", "")
        e.update(env or {})
        self.stderr_file = tempfile.TemporaryFile()

        def limit():
            if memory_limit:
                import resource
                resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

        self.proc = subprocess.Popen([sys.executable, "-m", "kcv.worker", *args],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, env=e,
                                     start_new_session=True, preexec_fn=limit)
        self.buf = b""
        self.lines = []  # every stdout line, for checks that nothing else reached stdout
        self.next_id = 1

    # --- lines -------------------------------------------------------------------------
    def send(self, obj) -> None:
        text = obj if isinstance(obj, str) else json.dumps(obj)
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 60.0):
        """The next reply as a dict; None on timeout; EOFError when stdout closed."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError("the worker closed its stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.lines.append(line)
        return json.loads(line)

    def request(self, obj, timeout: float = 60.0):
        self.send(obj)
        return self.recv(timeout)

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")

    # --- requests ------------------------------------------------------------------------
    def hello(self):
        return self.request({"type": "hello", "protocol": 1}, timeout=30)

    def start_load(self, **fields) -> None:
        """Sends hello and load without waiting (workers can then import torch in parallel)."""
        self.send({"type": "hello", "protocol": 1})
        self.send({"type": "load", **fields})

    def finish_load(self, timeout: float = 120.0):
        hello = self.recv(timeout)
        assert hello and hello["type"] == "hello", (hello, self.stderr())
        return self.recv(timeout)

    def load(self, timeout: float = 120.0, **fields):
        return self.request({"type": "load", **fields}, timeout)

    def call(self, inputs, outputs, task=None, timeout: float = 60.0, shift: int = 0,
             keep_file: bool = False, params=None) -> Call:
        """`inputs`: Args or tensors; `outputs`: (dtype, shape) pairs; `task`: the typed task
        (docs/06 §7.3; default a candidate's plain run, {"kind": "run", "seed": 0}); `params`:
        sent as given (a task call has none)."""
        args = [a if isinstance(a, Arg) else Arg.of(a) for a in inputs]
        path, req, regions = write_call_file(args, outputs, shift)
        req.update(id=self.next_id, task=task if task is not None else RUN, params=params or {},
                   launch={"block": 0, "threads": 1})
        self.next_id += 1
        try:
            reply = self.request(req, timeout)
            data = open(path, "rb").read()
        finally:
            if not keep_file:
                os.unlink(path)
        result = Call(reply)
        for (begin, raw), a in zip(regions[: len(args)], args):
            result.inputs_unchanged.append(data[begin : begin + len(raw)] == raw)
        for (begin, _), (dtype, shape) in zip(regions[len(args) :], outputs):
            n = torch.Size(shape).numel() * torch.empty(0, dtype=dtype).element_size()
            chunk = bytearray(data[begin + GUARD : begin + GUARD + n])
            t = torch.zeros(0, dtype=torch.uint8)
            if n:
                t = torch.frombuffer(chunk, dtype=torch.uint8)
            result.outputs.append(t.view(dtype).reshape(shape).clone())
        return result

    def shutdown(self, timeout: float = 10.0):
        reply = self.request({"type": "shutdown"}, timeout)
        self.proc.wait(timeout)
        return reply

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        for s in (self.proc.stdin, self.proc.stdout):
            try:
                s.close()
            except OSError:
                pass
        self.stderr_file.close()


def storage_bytes(a: Arg) -> bytes:
    """The whole storage of `a` as bytes (it must cover every element the view reaches)."""
    reach = sum((d - 1) * s for d, s in zip(a.shape, a.strides)) if all(a.shape) else -1
    assert a.storage.numel() >= a.offset + reach + 1, "Arg storage too short for its view"
    return a.storage.contiguous().view(torch.uint8).numpy().tobytes()


def write_call_file(args, outputs, shift: int = 0):
    """Creates the call's file; returns (path, request without id/params, [(begin, raw)])."""
    raws, descs = [], []
    for k, a in enumerate(args):
        body = storage_bytes(a)
        raws.append(bytes([GUARD_BYTE]) * GUARD + body + bytes([GUARD_BYTE]) * GUARD)
        descs.append(("input", k, a.storage.dtype, a.shape, a.strides,
                      GUARD + a.offset * a.storage.element_size()))
    for k, (dtype, shape) in enumerate(outputs):
        n = torch.Size(shape).numel() * torch.empty(0, dtype=dtype).element_size()
        raws.append(bytes([GUARD_BYTE]) * GUARD + bytes([POISON_BYTE]) * n +
                    bytes([GUARD_BYTE]) * GUARD)
        strides = torch.empty(shape).stride() if len(shape) else ()
        descs.append(("output", k, dtype, tuple(shape), tuple(strides), GUARD))
    header = {"__metadata__": {"format": "kcv-call", "protocol": "1"}}
    rel, cursor = [], 0
    for (kind, k, *_), raw in zip(descs, raws):
        begin = (cursor + 63) // 64 * 64 + shift
        header[f"{kind}.{k}"] = {"dtype": "U8", "shape": [len(raw)],
                                 "data_offsets": [begin, begin + len(raw)]}
        rel.append(begin)
        cursor = begin + len(raw)
    text = json.dumps(header)
    text += " " * ((-(8 + len(text))) % 64)
    start = 8 + len(text)
    blob = bytearray(start + cursor)
    blob[:8] = len(text).to_bytes(8, "little")
    blob[8:start] = text.encode()
    regions, req = [], {"type": "call", "inputs": [], "outputs": []}
    for (kind, k, dtype, shape, strides, offset), raw, r in zip(descs, raws, rel):
        begin = start + r
        blob[begin : begin + len(raw)] = raw
        regions.append((begin, raw))
        req[kind + "s"].append({"name": f"{kind}.{k}", "dtype": NAMES[dtype], "shape": list(shape),
                                "strides": list(strides), "offset": offset,
                                "raw": [begin, begin + len(raw)]})
    fd, path = tempfile.mkstemp(prefix="kcv-test-", dir="/dev/shm")
    os.write(fd, bytes(blob))
    os.close(fd)
    req["shm"] = {"path": path, "size": len(blob)}
    return path, req, regions


def draw(seed: int, keep: bool = False) -> dict:
    return {"kind": "draw", "seed": seed, "keep": keep}


def ref64(seed: int = 7, nan: str = "propagate", subnormals: str = "keep", **extra) -> dict:
    return {"kind": "reference64", "seed": seed, "nan": nan, "subnormals": subnormals, **extra}


def ref32(seed: int = 7, cudnn_tf32: bool = False, matmul_tf32: bool = False,
          autocast: str = "none", **extra) -> dict:
    return {"kind": "reference32", "seed": seed, "cudnn_tf32": cudnn_tf32,
            "matmul_tf32": matmul_tf32, "autocast": autocast, **extra}


def run(seed: int = 7, **extra) -> dict:
    return {"kind": "run", "seed": seed, **extra}


def pickled_add(a, b):
    """A module-level callable for the pickle load kind (imported by name in the worker)."""
    return a + b


def pickled_rowsum(x):
    """A module-level reference for the pickle load kind's reference role."""
    return x.sum(dim=1)


def pickled_scaled(a, scale=1.0):
    """A candidate taking keyword params (the pickle load's pass_params)."""
    return a * scale


class PickledAffine(torch.nn.Module):
    """An nn.Module reference with a parameter and a plain tensor attribute: its float64 model
    is a widened copy."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([0.5, -1.25, 2.0, 3.0]))
        self.shift = torch.tensor(0.1)

    def forward(self, x):
        return x * self.weight + self.shift
