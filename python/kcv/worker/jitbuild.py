"""The time a load spends in torch's JIT builds: torch.utils.cpp_extension.load and load_inline,
the calls through which KernelBench candidates build native code when their module runs.

problem.load measures every load (`measured`) and its reply says what it found (`build`,
docs/06 §7): how many such calls the load made, the seconds inside them, and whether the load's
build-cache entry (kcv.worker.buildcache) was published before the load began, and whether the
calls compiled anything (`compiled`: a library under the entry's TORCH_EXTENSIONS_DIR written
during the load). A load whose entry was published finds every build in place (ninja has nothing
to do, the library is imported). One whose entry was not usually builds in those seconds, but
not always: a build tree left by an earlier load that failed after its build (its module raised,
say) holds the library already, and torch imports it without compiling. kcv's audit puts the
candidate's figures in its timings (`build`, `build_cached`), so a build's cost is a recorded
fact beside the load that contains it, never inferred from the load's wall time.

The two functions are wrapped once per process (`instrument`), with functools.wraps, when the
module is first imported (an import hook; instrument never imports it itself), so a candidate
that imports them by name (`from torch.utils.cpp_extension import load_inline`) calls the
wrapper. Only the outermost call counts (load_inline does not call load
today, but a future torch may). A candidate in its sandbox could alter what its own worker
reports here; the figures are timings, never verdicts.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import os
import sys
import time
from dataclasses import dataclass
from typing import Iterator

_WRAPPED = "__kcv_jit_timed__"


@dataclass
class JitBuilds:
    """The JIT build calls of one load: how many, and their wall seconds."""
    calls: int = 0
    seconds: float = 0.0


_current: JitBuilds | None = None
_depth = 0


def _timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        global _depth
        outermost = _depth == 0
        _depth += 1
        t0 = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            _depth -= 1
            if outermost and _current is not None:
                _current.calls += 1
                _current.seconds += time.monotonic() - t0

    setattr(wrapper, _WRAPPED, True)
    return wrapper


_MODULE = "torch.utils.cpp_extension"


def _wrap_module(cpp) -> None:
    for name in ("load", "load_inline"):
        fn = getattr(cpp, name, None)
        if callable(fn) and not getattr(fn, _WRAPPED, False):
            setattr(cpp, name, _timed(fn))


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wraps load and load_inline right after the module's first import, by whoever imports it,
    so that measuring never imports the module itself: its import costs load time the candidate
    did not ask for and, on a machine without CUDA, prints a warning about the CUDA runtime into
    the worker's stderr, which the audit reads when it classifies a failed load."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _wrap_module(module)

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def instrument() -> None:
    """Wraps torch.utils.cpp_extension.load and load_inline in this process: at once when the
    module is imported already, else when it is first imported (never importing it here)."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _wrap_module(module)
    elif not any(isinstance(f, _WrapOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _WrapOnImport())


def libraries_written_since(root: str, since: float) -> int:
    """How many shared libraries under `root` were written at or after `since` (time.time()):
    torch's JIT build links one per extension it compiles and leaves one it finds up to date
    untouched."""
    n = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".so"):
                try:
                    if os.stat(os.path.join(dirpath, name)).st_mtime >= since:
                        n += 1
                except OSError:
                    pass
    return n


@contextlib.contextmanager
def measured() -> Iterator[JitBuilds]:
    """The JIT build calls made while the block runs (instrument() first)."""
    global _current
    instrument()
    before, _current = _current, JitBuilds()
    try:
        yield _current
    finally:
        _current = before
