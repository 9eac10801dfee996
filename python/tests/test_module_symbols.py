"""kcv._core and kcv._glr keep what their static archives bring in private (python/CMakeLists.txt,
kcv_private_archives): no function of the kcv library (libkcv.a) and no piece of libstdc++ is in
a module's dynamic symbol table. A module that exported them (as one built by a g++ that links
libstdc++ statically did) made torch's libstdc++ bind its own calls into the module's copy, and
`import torch` after kcv._core aborted in a std::locale destructor. The same abort comes on any
machine from this build's objects linked by hand with -static-libstdc++ and without
-Wl,--exclude-libs,ALL ("free(): invalid pointer" at `from kcv import _core; import torch`); with
it, both imports succeed."""

import importlib
import shutil
import subprocess

import pytest

if shutil.which("nm") is None or shutil.which("c++filt") is None:
    pytest.skip("nm and c++filt (binutils) read the modules' symbol tables", allow_module_level=True)


def exported(module: str) -> list[str]:
    path = importlib.import_module(module).__file__
    raw = subprocess.run(["nm", "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    names = subprocess.run(["c++filt"], input=raw, check=True, capture_output=True,
                           text=True).stdout
    return [line.split(" ", 2)[2] for line in names.splitlines() if line.count(" ") >= 2]


@pytest.mark.parametrize("module,archive_function", [
    ("kcv._core", "kcv::audit::Store::open("),  # in libkcv.a
    ("kcv._glr", "kcv::glr::"),                  # the reference in libkcv_glr_ref.a
])
def test_no_archive_symbol_is_exported(module, archive_function):
    pytest.importorskip(module)
    names = exported(module)
    assert any(n.startswith("PyInit_") for n in names), names[:20]  # the module's own entry point
    leaked = [n for n in names if n.startswith(archive_function)]
    assert not leaked, f"{module} exports {len(leaked)} function(s) of a static archive: {leaked[:5]}"
    libstdcxx = [n for n in names if n.startswith(("std::locale::", "std::ios_base::"))]
    assert not libstdcxx, f"{module} exports a copy of libstdc++: {libstdcxx[:5]}"
