"""No import cycles among stagecraft's modules (frontend/, converters/, ir/, backends/).

The graph is read from the source (the AST of every module, nothing is imported): an edge
``a -> b`` for each ``import`` of a stagecraft module ``b`` in module ``a`` (``from p import
name`` is an edge to ``p.name`` when that is a module, else to ``p``; the parent packages a
submodule import runs are not edges). Imports under ``if TYPE_CHECKING:`` never run and are
not edges.

Module-level imports are always edges. A function-local import is an edge too (it runs on the
first call, and hiding a cycle inside a function does not remove it) unless it is documented as
a deliberate lazy import: a comment containing ``lazy import`` on its line or on the comment
lines right above it, saying why (an optional or heavy dependency such as numba or
numba-cuda, or a module that is only needed on a rare path).
"""
from __future__ import annotations

import ast
import os
from typing import Iterator

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The folders and the package names pyproject.toml maps them to.
PACKAGES = {"frontend": "stagecraft", "converters": "stagecraft.converters",
            "ir": "stagecraft.ir", "backends": "stagecraft.backends"}
LAZY = "lazy import"


def modules() -> dict[str, str]:
    """Dotted module name -> file, for every module of the four folders."""
    out = {}
    for folder, package in PACKAGES.items():
        base = os.path.join(ROOT, folder)
        for directory, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(directory, f), base)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join([package] + rel)] = os.path.join(directory, f)
    return out


def _documented_lazy(lines: list[str], node: ast.stmt) -> bool:
    if LAZY in lines[node.lineno - 1]:
        return True
    i = node.lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        if LAZY in lines[i]:
            return True
        i -= 1
    return False


def imports(name: str, path: str, mods: dict[str, str]) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, whether inside a function) for each stagecraft import of one
    module, documented lazy imports left out."""
    source = open(path, encoding="utf-8").read()
    lines = source.splitlines()
    is_package = path.endswith("__init__.py")

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            candidate = ".".join(parts[:i])
            if candidate in mods:
                return candidate
        return None

    def targets(node: ast.stmt) -> Iterator[str]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
            return
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            package = name.split(".") if is_package else name.split(".")[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in mods else base

    def visit(node: ast.AST, local: bool) -> Iterator[tuple[str, int, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from visit(child, True)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from visit(ast.Module(body=child.orelse, type_ignores=[]), local)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                if local and _documented_lazy(lines, child):
                    continue
                for target in targets(child):
                    module = resolve(target)
                    if module is not None and module != name:
                        yield module, child.lineno, local
            else:
                yield from visit(child, local)

    yield from visit(ast.parse(source, path), False)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        # Iterative, so a long import chain cannot reach Python's recursion limit.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _describe(component: list[str], edges: dict[str, list[tuple[str, int, bool]]],
              mods: dict[str, str]) -> str:
    members = set(component)
    lines = [f"import cycle among {len(component)} modules: {', '.join(component)}"]
    for m in component:
        for target, line, local in sorted(set(edges[m])):  # (one per import statement)
            if target in members:
                where = os.path.relpath(mods[m], ROOT)
                lines.append(f"  {where}:{line} imports {target}"
                             f"{' (inside a function)' if local else ''}")
    return "\n".join(lines)


def _check(include_local: bool) -> None:
    mods = modules()
    edges = {m: [e for e in imports(m, p, mods) if include_local or not e[2]]
             for m, p in mods.items()}
    graph = {m: {t for t, _, _ in es} for m, es in edges.items()}
    found = cycles(graph)
    assert not found, "\n\n".join(_describe(c, edges, mods) for c in found)


def test_no_cycles_among_module_level_imports() -> None:
    _check(include_local=False)


def test_no_cycles_hidden_in_function_local_imports() -> None:
    _check(include_local=True)


def test_the_walk_sees_the_package() -> None:
    """Guards the test itself: the walk finds the modules and their edges."""
    mods = modules()
    assert "stagecraft" in mods and "stagecraft.ir.graph" in mods
    assert "stagecraft.backends" in mods and "stagecraft.converters.api" in mods
    edges = {t for t, _, _ in imports("stagecraft.staging.function",
                                      mods["stagecraft.staging.function"], mods)}
    assert "stagecraft.staging.concrete_function" in edges
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("source, expected", [
    ("import stagecraft.ir.graph\n", {("stagecraft.ir.graph", False)}),
    ("def f():\n    from stagecraft.ir import graph\n", {("stagecraft.ir.graph", True)}),
    ("def f():\n    # lazy import: heavy\n    from stagecraft.ir import graph\n", set()),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import stagecraft.ir.graph\n",
     set()),
])
def test_edges_of_a_module(tmp_path, source: str, expected: set) -> None:
    path = tmp_path / "m.py"
    path.write_text(source)
    mods = {"stagecraft.x.m": str(path), "stagecraft.ir.graph": "", "stagecraft.ir": ""}
    assert {(t, local) for t, _, local in imports("stagecraft.x.m", str(path), mods)} == expected


def test_the_registries_that_replace_cyclic_imports_are_filled() -> None:
    """Where two layers call each other, the lower one holds a registry the upper one fills on
    import (instead of an import inside a function)."""
    import stagecraft  # noqa: F401
    from stagecraft.autodiff.replay import REPLAYERS
    from stagecraft.converters.operators import calls
    from stagecraft.eager.tensor import LATE_BOUND
    assert set(LATE_BOUND) == {"copy", "stack", "slice_method"}
    assert set(REPLAYERS) == {"cond", "while"}
    # converted_call runs only in converted code, which exists once the converter has loaded
    from stagecraft.converters import api
    assert calls._CONVERTER == [api.convert]


def test_importing_stagecraft_loads_neither_autograph_nor_numba() -> None:
    """The documented lazy imports are lazy: a program that never traces or compiles pays for
    neither gast nor numba."""
    import subprocess
    import sys
    code = ("import sys, stagecraft as tf; tf.constant([1.0]) * 2.0; "
            "print(sorted(m for m in ('gast', 'numba', 'stagecraft.converters.api') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
