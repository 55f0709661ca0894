"""AutoGraph's entry points: ``convert`` (cached per code object), ``to_code``,
``show_converted`` and ``do_not_convert``."""
from __future__ import annotations

import ast
import threading
import types
import weakref
from typing import Any, Callable

import astunparse
import gast

from stagecraft.converters import loader, operators
from stagecraft.converters.context import Context, Namer
from stagecraft.converters.passes import (break_statements, call_trees, checks,
                                          continue_statements, control_flow, expressions,
                                          return_statements)
from stagecraft.converters.source import function_tree

# The passes, in order. Jumps are lowered first so control_flow sees structured code;
# call_trees runs before control_flow so the operator calls it generates are not rerouted;
# expressions runs last so the flag tests the jump passes wrote (`not brk`) become lazy too.
PIPELINE = (checks, break_statements, continue_statements, return_statements, call_trees,
            control_flow, expressions)

_lock = threading.RLock()
_by_code: dict[types.CodeType, tuple[Callable, str]] = {}  # code -> (a converted fn, source)
_by_function: "weakref.WeakKeyDictionary[Callable, Callable]" = weakref.WeakKeyDictionary()


def convert(fn: Callable) -> Callable:
    """``fn`` with its control flow rewritten into runtime operator calls (cached).

    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> convert(f)(-3)
    3
    """
    with _lock:
        hit = _by_function.get(fn)
        if hit is not None:
            return hit
        entry = _by_code.get(fn.__code__)
        if entry is None:
            node, source = transform(fn)
            converted = loader.load(fn, node, fn.__code__.co_filename, operators)
            converted.__sc_source__ = source
            _by_code[fn.__code__] = (converted, source)
        else:
            converted = _rebind(entry[0], fn)
            converted.__sc_source__ = entry[1]
        _by_function[fn] = converted
        return converted


def _rebind(template: Callable, fn: Callable) -> Callable:
    """Another function object with ``template``'s converted code and ``fn``'s closure."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    tcells = dict(zip(template.__code__.co_freevars, template.__closure__ or ()))
    closure = tuple(cells.get(n) or tcells[n] for n in template.__code__.co_freevars)
    new = types.FunctionType(template.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    return new


def transform(fn: Callable) -> tuple[gast.FunctionDef, str]:
    """The converted syntax tree of ``fn`` and its source text."""
    node, filename, _ = function_tree(fn)
    ctx = Context(filename, getattr(fn, "__qualname__", fn.__name__), Namer.for_tree(node))
    for p in PIPELINE:
        node = p.convert(node, ctx)
    return node, render(node)


def render(node: gast.AST) -> str:
    """Source text of a tree (astunparse; the standard library where it cannot render)."""
    tree = gast.gast_to_ast(node)
    try:
        return astunparse.unparse(tree).strip() + "\n"
    except Exception:  # astunparse lags behind new syntax
        return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _python_function(f: Any) -> Callable:
    fn = getattr(f, "python_function", f)
    return getattr(fn, "__sc_method__", (fn,))[0]


def to_code(f: Any) -> str:
    """The converted source of ``f`` (a function or a ``stagecraft.function``)."""
    return transform(_python_function(f))[1]


def show_converted(f: Any) -> str:
    """Prints and returns the code AutoGraph generates for ``f``.

    >>> import stagecraft as tf
    >>> src = tf.show_converted(_example)  # doctest: +ELLIPSIS
    def _example(x):
    ...
    >>> "sc__.if_stmt" in src
    True
    """
    source = to_code(f)
    print(source, end="")
    return source


def _example(x):
    if x > 0:
        x = x - 1
    return x


def do_not_convert(func: Callable | None = None) -> Callable:
    """Marks ``func`` so AutoGraph calls it unconverted (its Python control flow then only
    works on Python values and eager tensors)."""
    def mark(f: Callable) -> Callable:
        f.__sc_do_not_convert__ = True
        return f
    return mark if func is None else mark(func)
