"""Shared helpers for the break/continue/return and analysis tests: a stub runtime, compiling
converted gast trees, a random program generator, and a library of small functions."""
from __future__ import annotations

import ast
import copy
import textwrap
from collections.abc import Callable
from typing import Any

import astunparse
import gast
from hypothesis import strategies as st
from stagecraft.converters.context import Context, Namer
from stagecraft.converters.passes import (
    break_statements,
    continue_statements,
    return_statements,
)
from stagecraft.converters.source import function_tree


class _UndefinedReturnValue:
    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


class RuntimeStub:
    """What generated code finds under ``sc__`` in these tests."""

    UndefinedReturnValue = _UndefinedReturnValue


PASSES = {"break": break_statements, "continue": continue_statements,
          "return": return_statements}
ALL = ("break", "continue", "return")


def context_for(fn: gast.FunctionDef) -> Context:
    return Context("<test>", fn.name, Namer.for_tree(fn))


def convert_tree(fn: gast.FunctionDef, passes: tuple[str, ...] = ALL) -> gast.FunctionDef:
    ctx = context_for(fn)
    for name in passes:
        fn = PASSES[name].convert(fn, ctx)
    return fn


def parse_def(source: str) -> gast.FunctionDef:
    (fn,) = gast.parse(textwrap.dedent(source)).body
    return fn


def unparse(fn: gast.AST) -> str:
    return astunparse.unparse(gast.gast_to_ast(lower_extra_tests(fn, keep=True))).strip()


class _ExtraTests(gast.NodeTransformer):
    """Test-only lowering of ``sc_extra_test`` with the semantics the control-flow pass
    implements: checked before each iteration, a false test stops the loop like a break.
    (Before the first iteration the generated test is always true, so checking it at the end
    of each iteration is exact and never fetches an element too many.)"""

    def visit_For(self, node: gast.For) -> gast.For:
        self.generic_visit(node)
        extra = getattr(node, "sc_extra_test", None)
        if extra is not None:
            check = gast.If(test=gast.UnaryOp(gast.Not(), copy.deepcopy(extra)),
                            body=[gast.Break()], orelse=[])
            node.body = node.body + [check]
            del node.sc_extra_test
        return node


def lower_extra_tests(fn: gast.AST, keep: bool = False, owned: bool = False) -> gast.AST:
    fn = fn if owned else copy.deepcopy(fn)
    if keep:  # for display: show the extra test as a comment-like marker statement
        for node in gast.walk(fn):
            extra = getattr(node, "sc_extra_test", None)
            if isinstance(node, gast.For) and extra is not None:
                marker = gast.Expr(gast.Call(gast.Name("EXTRA_TEST", gast.Load(), None, None),
                                             [extra], []))
                node.body = [marker] + node.body
                del node.sc_extra_test
        return fn
    return _ExtraTests().visit(fn)


def compile_tree(fn: gast.FunctionDef, namespace: dict | None = None,
                 owned: bool = False) -> Callable:
    """The Python function for a (converted) gast ``FunctionDef`` (which it may change when
    the caller ``owned`` it)."""
    tree = gast.gast_to_ast(gast.Module([lower_extra_tests(fn, owned=owned)], []))
    ast.fix_missing_locations(tree)
    env = {"sc__": RuntimeStub, **(namespace or {})}
    exec(compile(tree, "<converted>", "exec"), env)  # noqa: S102
    return env[fn.name]


def outcome(f: Callable, *args: Any) -> tuple:
    try:
        return ("ok", f(*args))
    except Exception as e:  # noqa: BLE001 - the same error type must come out
        return ("raise", type(e).__name__)


def converted(f: Callable, passes: tuple[str, ...] = ALL) -> Callable:
    fn, _, _ = function_tree(f)
    return compile_tree(convert_tree(fn, passes), dict(f.__globals__))


def own_statements(stmts: list[gast.stmt]):
    """Every statement of this function's own scope."""
    for s in stmts:
        yield s
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(s, name, None)
            if isinstance(block, list):
                yield from own_statements(block)
        for part in getattr(s, "handlers", []) + getattr(s, "cases", []):
            yield from own_statements(part.body)


def assert_jump_free(fn: gast.FunctionDef) -> None:
    """What the control-flow pass requires: no break/continue, no loop else, at most one
    return, as the last statement (nested functions checked as their own functions)."""
    for s in own_statements(fn.body):
        assert not isinstance(s, (gast.Break, gast.Continue)), astunparse.unparse(
            gast.gast_to_ast(s))
        if isinstance(s, (gast.For, gast.While)):
            assert not s.orelse
        if isinstance(s, gast.Return):
            assert s is fn.body[-1]
        if isinstance(s, gast.FunctionDef):
            assert_jump_free(s)


# ---------------------------------------------------------------------------------------
# Random small programs over ints: nested if/while/for with break/continue/return, bounded.

_VARS = ("a", "b", "c")


@st.composite
def _expr(draw: Callable, names: tuple[str, ...]) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return str(draw(st.integers(-3, 5)))
    if kind == 1:
        return draw(st.sampled_from(names))
    left, right = draw(st.sampled_from(names)), draw(st.sampled_from(names + ("1", "2", "3")))
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"({left} {op} {right}) % 7"


@st.composite
def _cond(draw: Callable, names: tuple[str, ...]) -> str:
    op = draw(st.sampled_from(["<", ">", "==", "!=", "<=", ">="]))
    return f"{draw(_expr(names))} {op} {draw(_expr(names))}"


@st.composite
def _block(draw: Callable, depth: int, in_loop: bool, names: tuple[str, ...],
           counter: list[int]) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["assign", "assign", "trace"]
        if depth < 3:
            kinds += ["if", "for", "while"]
        if in_loop:
            kinds += ["break", "continue"]
        kinds += ["return"]
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            lines.append(f"{draw(st.sampled_from(_VARS))} = {draw(_expr(names))}")
        elif kind == "trace":
            lines.append(f"trace.append({draw(_expr(names))})")
        elif kind in ("break", "continue"):
            lines.append(f"if {draw(_cond(names))}:" if draw(st.booleans()) else "if True:")
            lines.append(f"    {kind}")
        elif kind == "return":
            if draw(st.booleans()):
                lines.append(f"if {draw(_cond(names))}:")
                lines.append(f"    return ({draw(_expr(names))}, trace)")
            else:
                lines.append(f"return ({draw(_expr(names))}, trace)")
                break
        elif kind == "if":
            lines.append(f"if {draw(_cond(names))}:")
            lines += ["    " + ln for ln in draw(_block(depth + 1, in_loop, names, counter))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + ln for ln in draw(_block(depth + 1, in_loop, names, counter))]
        else:
            counter[0] += 1
            var = f"{'i' if kind == 'for' else 'w'}{counter[0]}"
            inner = names + (var,)
            if kind == "for":
                lines.append(f"for {var} in range({draw(_expr(names))} % 4):")
                body = draw(_block(depth + 1, True, inner, counter))
            else:
                lines.append(f"{var} = 0")
                lines.append(f"while {var} < 3 and {draw(_cond(names))}:")
                body = [f"{var} += 1"] + draw(_block(depth + 1, True, inner, counter))
            lines += ["    " + ln for ln in body]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + ln for ln in draw(_block(depth + 1, in_loop, names, counter))]
    return lines


@st.composite
def programs(draw: Callable) -> str:
    """Source of ``def prog(x, y)`` returning a value and the trace of what ran."""
    body = ["a = x", "b = y", "c = 0", "trace = []"]
    body += draw(_block(0, False, ("a", "b", "c", "x", "y"), [0]))
    if draw(st.booleans()):
        body.append("return (a, b, c, trace)")
    return "def prog(x, y):\n" + "".join(f"    {ln}\n" for ln in body)


def compile_source(source: str) -> Callable:
    env: dict = {}
    exec(compile(source, "<original>", "exec"), env)  # noqa: S102
    return env["prog"]
