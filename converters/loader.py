"""Turning a converted syntax tree back into a function with the original globals, closure
cells and defaults. The code is compiled from the tree itself with the user's file name and
line numbers (rather than from generated text registered in linecache), so tracebacks and
stagecraft's messages point at the user's own source lines: the source map is the identity."""
from __future__ import annotations

import ast
import types
from typing import Any, Callable

import gast

from stagecraft.converters.context import RUNTIME

FACTORY = "sc__factory"
_converted_codes: set = set()  # code objects made here (nested ones too): never reconverted


def is_converted(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and code in _converted_codes


def load(fn: Callable, node: gast.FunctionDef, filename: str, runtime: Any) -> Callable:
    """The function ``node`` defines, built like ``fn`` (same globals, closure, defaults)."""
    freevars = [v for v in fn.__code__.co_freevars if v != RUNTIME]
    params = [gast.Name(n, gast.Param(), None, None) for n in [RUNTIME] + freevars]
    # The factory's `def` would bind the function's name in the factory, so the converted
    # code would read its own name (a recursive call) from an empty cell there instead of
    # from the user's globals. Declared global, the name means what it meant in the original
    # (the factory itself never runs: only its child code object is used). A name that is a
    # closure variable of the original (a recursive nested function) stays a factory
    # parameter bound to the original cell.
    scope = [] if node.name in freevars else [gast.Global(names=[node.name])]
    factory = gast.FunctionDef(
        name=FACTORY,
        args=gast.arguments(args=params, posonlyargs=[], vararg=None, kwonlyargs=[],
                            kw_defaults=[], kwarg=None, defaults=[]),
        body=scope + [node, gast.Return(gast.Name(node.name, gast.Load(), None, None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.gast_to_ast(gast.Module(body=[factory], type_ignores=[]))
    _locate(module, node)
    code = compile(module, filename, "exec")
    factory_code = _child(code, FACTORY)
    fn_code = _child(factory_code, node.name)
    _remember(fn_code)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[RUNTIME] = types.CellType(runtime)
    closure = tuple(cells.get(n) or types.CellType() for n in fn_code.co_freevars)
    new = types.FunctionType(fn_code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__dict__.update(getattr(fn, "__dict__", {}))
    return new


def _locate(module: ast.Module, node: gast.FunctionDef) -> None:
    line = getattr(node, "lineno", 1) or 1
    for sub in ast.walk(module):
        if "lineno" in sub._attributes and getattr(sub, "lineno", None) is None:
            sub.lineno, sub.col_offset = line, 0
            sub.end_lineno, sub.end_col_offset = line, 0
    ast.fix_missing_locations(module)


def _child(code: types.CodeType, name: str) -> types.CodeType:
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _remember(code: types.CodeType) -> None:
    _converted_codes.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _remember(c)
