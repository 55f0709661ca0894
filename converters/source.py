"""Getting a function's source and its syntax tree (functions, methods, nested functions,
lambdas, decorated functions), with a clear error when there is none (REPL, exec)."""
from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable

import gast

from stagecraft.ir.errors import ConversionError


class SourceUnavailableError(ConversionError):
    """The function has no source code to convert (REPL, ``exec``, ``python -c``)."""


def function_tree(fn: Callable) -> tuple[gast.FunctionDef, str, int]:
    """The function's definition as a gast ``FunctionDef`` (a lambda becomes an equivalent
    def), with line numbers of the user's file, plus that file's name and the first line."""
    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise SourceUnavailableError(
            f"Cannot convert '{getattr(fn, '__qualname__', fn)}': its source code is not "
            f"available (functions defined in a REPL, with exec() or python -c have none). "
            f"Define it in a .py file, or decorate it with "
            f"@tf.autograph.experimental.do_not_convert / use tf.function(autograph=False).") \
            from None
    module = _whole_file(fn) if code.co_name == "<lambda>" else None
    whole = module is not None  # columns are the file's own (a fragment may be dedented)
    if module is None:
        source = textwrap.dedent("".join(lines))
        try:
            module = gast.parse(source)
        except SyntaxError:
            # A lambda inside a larger expression: parse its line on its own.
            module = _parse_fragment(source, fn)
        gast.increment_lineno(module, first - 1)
    node = _find(module, fn, columns_exact=whole)
    if node is None:
        raise ConversionError(f"Cannot convert '{fn.__qualname__}': its definition was not found "
                              f"in its source at {code.co_filename}:{first}.")
    if isinstance(node, gast.Lambda):
        node = _lambda_to_def(node, fn)
    node.decorator_list = []  # the decorators already ran; converting must not re-apply them
    return node, code.co_filename, first


def _whole_file(fn: Callable) -> gast.Module | None:
    """The syntax tree of the whole file defining a lambda (a lambda's own lines need not
    parse: it may sit inside a multi-line literal or call), or None when that file does not
    parse as it is now."""
    try:
        lines, _ = inspect.findsource(fn)
        return gast.parse("".join(lines))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None


def _parse_fragment(source: str, fn: Callable) -> gast.Module:
    text = source.strip()
    while text:
        try:
            return gast.parse(text)
        except SyntaxError:
            text = text[:-1]
    raise ConversionError(f"Cannot convert '{fn.__qualname__}': its source does not parse.")


def _find(module: gast.Module, fn: Callable, columns_exact: bool = False) -> Any:
    name = fn.__code__.co_name
    if name == "<lambda>":
        line = fn.__code__.co_firstlineno
        lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
                   and getattr(n, "lineno", line) == line]
        args = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        matching = [n for n in lambdas if [a.id for a in n.args.args] == args]
        if len(matching) > 1 and columns_exact:
            matching = [n for n in matching if _spans_code(n, fn.__code__)]
        if len(matching) > 1:
            raise ConversionError(
                f"Cannot convert the lambda at {fn.__code__.co_filename}:"
                f"{fn.__code__.co_firstlineno}: several lambdas with the same arguments share "
                f"that line. Put it on its own line or make it a def.")
        return matching[0] if matching else None
    for n in gast.walk(module):
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)) and n.name == name:
            return n
    return None


def _spans_code(node: gast.Lambda, code: Any) -> bool:
    """Whether the source span of ``node`` holds the instructions of ``code`` (their column
    positions, Python 3.11+), which tells apart lambdas with the same arguments on one line."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return True
    start = (node.lineno, node.col_offset)
    end = (getattr(node, "end_lineno", node.lineno), getattr(node, "end_col_offset", 1 << 30))
    inside = [start <= (line, col) < end for line, _, col, _ in positions()
              if line is not None and col is not None and (line, col) > start]
    return bool(inside) and all(inside)


def _lambda_to_def(node: gast.Lambda, fn: Callable) -> gast.FunctionDef:
    ret = gast.Return(value=node.body)
    gast.copy_location(ret, node.body)
    fdef = gast.FunctionDef(name="lambda_", args=node.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    return gast.copy_location(fdef, node)
