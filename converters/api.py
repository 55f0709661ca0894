"""AutoGraph's entry points: ``convert`` (cached per code object), ``to_code``,
``show_converted`` and ``do_not_convert``."""
from __future__ import annotations

import ast
import logging
import threading
import types
import weakref
from typing import Any, Callable

import astunparse
import gast

from stagecraft.converters import loader, operators
from stagecraft.converters.context import RUNTIME, Context, Namer
from stagecraft.converters.operators.calls import set_converter
from stagecraft.converters.passes import (asserts, break_statements, call_trees, checks,
                                          continue_statements, control_flow, directives,
                                          expressions, return_statements, variables)
from stagecraft.converters.source import SourceUnavailableError, function_tree

logger = logging.getLogger("stagecraft")

# The passes, in order. Directives come off loop bodies before the jump passes rewrite those
# bodies; jumps are lowered before control_flow so it sees structured code;
# asserts follow them (an assert becomes an ordinary call statement, and call_trees leaves
# sc__.* calls alone while still converting the calls inside the test and message);
# call_trees runs before control_flow so the operator calls it generates are not rerouted;
# variables (del x -> x = Undefined) runs before control_flow, whose state closures cannot
# read a deleted local;
# expressions runs last so the flag tests the jump passes wrote (`not brk`) become lazy too.
PIPELINE = (checks, directives, break_statements, continue_statements, return_statements,
            asserts, call_trees, variables, control_flow, expressions)

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
            try:
                node, source = transform(fn)
            except SourceUnavailableError as e:
                _by_function[fn] = fn
                _warn_unconverted(fn, e)
                return fn
            converted = loader.load(fn, node, fn.__code__.co_filename, operators)
            converted.__sc_source__ = source
            _by_code[fn.__code__] = (converted, source)
        else:
            converted = _rebind(entry[0], fn)
            converted.__sc_source__ = entry[1]
        _by_function[fn] = converted
        return converted


set_converter(convert)  # converted_call converts the user functions it calls with it


def _warn_unconverted(fn: Callable, why: Exception) -> None:
    """TensorFlow runs a function without source unconverted; stagecraft does too, loudly."""
    code = fn.__code__
    logger.warning(
        "AutoGraph could not convert '%s' (%s:%s) and runs it unconverted: its source code "
        "is not available. Python if/while/for on a symbolic tensor inside it will raise "
        "OperatorNotAllowedInGraphError.\n%s", getattr(fn, "__qualname__", fn.__name__),
        code.co_filename, code.co_firstlineno, why)


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


def show_converted(f: Any, trace: bool = False) -> str:
    """Prints and returns the code AutoGraph generates for ``f``.

    With ``trace=True`` a report follows the code, as comment lines: for each of ``f``'s
    converted ``if``/``while``/``for`` (by 'file:line'), whether the last trace of ``f`` ran it
    as Python or staged it, and the variables it carried; then the statements of functions it
    called in that trace. For a plain function, the last time each statement ran.

    >>> import stagecraft as tf
    >>> src = tf.show_converted(_example)  # doctest: +ELLIPSIS
    def _example(x):
    ...
    >>> "sc__.if_stmt" in src
    True
    >>> g = tf.function(_example)
    >>> _ = g(tf.constant(3))
    >>> src = tf.show_converted(g, trace=True)  # doctest: +ELLIPSIS
    def _example(x):
    ...
    # Trace report (last trace of _example):
    #   ...api.py:...  if     staged  carries: x
    """
    fn = _python_function(f)
    node, source = transform(fn)
    if trace:
        source += trace_report_text(f, node)
    print(source, end="")
    return source


_STATEMENTS = {"if_stmt": "if", "while_stmt": "while", "for_stmt": "for"}


def _statements(node: gast.AST) -> list[tuple[str, str]]:
    """(kind, 'file:line') of every converted control-flow statement in a converted tree, in
    source order."""
    found = {}
    for sub in gast.walk(node):
        if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Attribute) and \
                isinstance(sub.func.value, gast.Name) and sub.func.value.id == RUNTIME and \
                sub.func.attr in _STATEMENTS and sub.args and \
                isinstance(sub.args[-1], gast.Constant) and isinstance(sub.args[-1].value, str):
            found[sub.args[-1].value] = _STATEMENTS[sub.func.attr]

    def line(loc: str) -> int:
        tail = loc.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else 0
    return [(kind, loc) for loc, kind in sorted(found.items(), key=lambda kv: line(kv[0]))]


def trace_report_text(f: Any, node: gast.AST | None = None) -> str:
    """The trace report of ``f`` as comment lines (what ``show_converted(f, trace=True)``
    appends): per control-flow statement, Python or staged in the last trace, and what it
    carried.

    >>> def h(n):
    ...     for i in range(n):
    ...         n = n + 1
    ...     return n
    >>> print(trace_report_text(h), end="")  # doctest: +ELLIPSIS
    # Trace report (h has not run converted yet: call it, e.g. through stagecraft.function):
    #   ...:2  for    not reached
    >>> _ = convert(h)(2)
    >>> print(trace_report_text(h), end="")  # doctest: +ELLIPSIS
    # Trace report (last run of h):
    #   ...:2  for    python  carries: n
    """
    from stagecraft.converters.operators import trace_report
    fn = _python_function(f)
    if node is None:
        node = transform(fn)[0]
    statements = _statements(node)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "function"))
    if hasattr(f, "_last_trace_report"):  # a stagecraft.function
        report = f._last_trace_report
        lookup = report.get if report is not None else (lambda loc: None)
        header = f"last trace of {name}" if report is not None else \
            f"{name} has not been traced yet: call it first"
        if not getattr(f, "_autograph", True):
            header = f"{name} is traced without AutoGraph (autograph=False): nothing converted"
            lookup = lambda loc: None
    else:
        report = None
        lookup = trace_report.latest
        header = f"last run of {name}"
        if not any(lookup(loc) for _, loc in statements):
            header = (f"{name} has not run converted yet: call it, e.g. through "
                      f"stagecraft.function")
    lines = [f"# Trace report ({header}):"]
    if not statements:
        lines.append("#   (no converted if/while/for statements)")
    for kind, loc in statements:
        entry = lookup(loc)
        lines.append(f"#   {entry.describe()}" if entry is not None else
                     f"#   {loc}  {kind:5s}  not reached")
    own = {loc for _, loc in statements}
    others = [e for e in report.entries() if e.loc not in own] if report is not None else []
    if others:
        lines.append("# In functions it called:")
        lines += [f"#   {e.describe()}" for e in others]
    return "\n".join(lines) + "\n"


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
