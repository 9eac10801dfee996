"""kcv.worker.jitbuild: measuring a load's JIT builds never imports torch.utils.cpp_extension
itself (its import costs load time and, without CUDA, prints a CUDA warning into the worker's
stderr), and the module's load and load_inline are wrapped once it is imported, also when a
candidate imports them by name."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_measuring_does_not_import_cpp_extension_and_wraps_it_on_import():
    printed = run("""
        import sys
        import torch
        from kcv.worker import jitbuild
        with jitbuild.measured() as jit:
            print("imported before:", "torch.utils.cpp_extension" in sys.modules)
            from torch.utils.cpp_extension import load_inline, load
            print("wrapped:", getattr(load_inline, "__kcv_jit_timed__", False),
                  getattr(load, "__kcv_jit_timed__", False))
            try:
                load_inline(name="x", cpp_sources="not c++", functions=None, verbose=False)
            except Exception:
                pass
        print("calls:", jit.calls, jit.seconds > 0)
    """)
    assert "imported before: False" in printed
    assert "wrapped: True True" in printed
    assert "calls: 1 True" in printed


def test_a_module_imported_before_is_wrapped_at_once():
    printed = run("""
        import torch.utils.cpp_extension as cpp
        from kcv.worker import jitbuild
        jitbuild.instrument()
        print(getattr(cpp.load_inline, "__kcv_jit_timed__", False))
    """)
    assert printed == "True"
