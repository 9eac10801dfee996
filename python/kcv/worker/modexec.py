"""Executing untrusted source text as a fresh Python module, with module-level constants
overridden.

Each module gets a unique name registered in sys.modules (dataclasses, pickle and typing look a
class's module up there) and a real source file under the cache directory as __file__ (Triton's
@jit and inspect.getsource read a function's source from it; tracebacks quote its lines). The
file holds the text as given; overrides are applied to the parsed tree instead: the value of a
top-level `NAME = ...` (or `NAME: int = ...`) becomes the override, so constants derived from it
further down (`dim = N * 2`) follow, as they would had the file been edited. The line numbers do
not move.
"""

import ast
import itertools
import os
import sys
import types

_counter = itertools.count()


def top_level_names(code: str) -> set:
    """Names a top-level `NAME = ...` or `NAME: T = ...` statement of `code` assigns."""
    names = set()
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


class _Override(ast.NodeTransformer):
    def __init__(self, values: dict):
        self.values = values

    def visit_Module(self, node):  # only the top level: function bodies keep their locals
        for stmt in node.body:
            targets = []
            if isinstance(stmt, ast.Assign):
                targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                targets = [stmt.target.id] if stmt.value is not None else []
            hit = [t for t in targets if t in self.values]
            if hit and len(targets) == 1:
                stmt.value = ast.copy_location(ast.Constant(self.values[hit[0]]), stmt.value)
        return node


def exec_module(code: str, label: str, src_dir: str, overrides: dict) -> types.ModuleType:
    """Runs `code` as a new module named kcv_kb_<label>_<pid>_<n>; `overrides` maps module-level
    names to values (applied to top-level assignments, and set again after the run)."""
    name = f"kcv_kb_{label}_{os.getpid()}_{next(_counter)}"
    os.makedirs(src_dir, exist_ok=True)
    path = os.path.join(src_dir, name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    tree = _Override(overrides).visit(ast.parse(code, filename=path))
    compiled = compile(tree, path, "exec")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compiled, module.__dict__)  # noqa: S102 (the whole point; runs in the worker only)
    for key, value in overrides.items():
        module.__dict__[key] = value
    return module


def int_constants(module: types.ModuleType) -> dict:
    """The module's public module-level ints (bools excluded): KernelBench's shape constants."""
    return {k: v for k, v in vars(module).items()
            if type(v) is int and not k.startswith("_")}
