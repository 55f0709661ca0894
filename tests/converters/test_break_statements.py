"""The break pass: exact output for small snippets, and same results as the original."""
from __future__ import annotations

import functools

import gast
import jump_lowering_cases as cases
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jump_lowering_support import (
    compile_tree,
    convert_tree,
    converted,
    outcome,
    parse_def,
    unparse,
)
from stagecraft.converters.passes import break_statements


def _after(source: str) -> str:
    return unparse(convert_tree(parse_def(source), ("break",)))


def test_while_break_becomes_flag_in_test() -> None:
    assert _after("""
        def f(i, n):
            while i < n:
                if i > 3:
                    break
                i += 1
            return i
    """) == """\
def f(i, n):
    brk = False
    while ((not brk) and (i < n)):
        if (i > 3):
            brk = True
        if (not brk):
            i += 1
    return i"""


def test_for_break_sets_extra_test_and_keeps_header() -> None:
    fn = convert_tree(parse_def("""
        def f(xs):
            for x in xs:
                if x:
                    break
                g(x)
    """), ("break",))
    loop = fn.body[1]
    assert isinstance(loop, gast.For)
    assert isinstance(loop.iter, gast.Name) and loop.iter.id == "xs"
    extra = loop.sc_extra_test
    assert isinstance(extra, gast.UnaryOp) and isinstance(extra.op, gast.Not)
    assert extra.operand.id == "brk"
    assert unparse(fn) == """\
def f(xs):
    brk = False
    for x in xs:
        EXTRA_TEST((not brk))
        if x:
            brk = True
        if (not brk):
            g(x)"""


def test_loop_else_with_break_becomes_guarded_if() -> None:
    assert _after("""
        def f(xs):
            for x in xs:
                break
            else:
                g()
    """) == """\
def f(xs):
    brk = False
    for x in xs:
        EXTRA_TEST((not brk))
        brk = True
    if (not brk):
        g()"""


def test_loop_else_without_break_follows_loop() -> None:
    assert _after("""
        def f(n):
            while n:
                n -= 1
            else:
                g()
    """) == """\
def f(n):
    while n:
        n -= 1
    g()"""


def test_statements_after_unconditional_break_are_dropped() -> None:
    assert _after("""
        def f():
            while True:
                a()
                break
                b()
    """) == """\
def f():
    brk = False
    while ((not brk) and True):
        a()
        brk = True"""


def test_inner_break_belongs_to_inner_loop_and_names_are_fresh() -> None:
    out = _after("""
        def f(brk):
            for i in r:
                for j in r:
                    break
                break
    """)
    assert "brk_1 = False" in out and "brk_2 = False" in out
    assert "break" not in out.replace("brk", "")


def test_break_in_nested_function_and_with_try() -> None:
    out = _after("""
        def f():
            def g(xs):
                for x in xs:
                    with m:
                        try:
                            break
                        finally:
                            h()
                    k()
            return g
    """)
    assert "break" not in out.replace("brk", "")
    assert "if (not brk):\n                k()" in out


def test_no_break_leaves_loop_unchanged() -> None:
    source = """
        def f(xs):
            for x in xs:
                g(x)
    """
    assert _after(source) == unparse(parse_def(source))


def test_generated_nodes_carry_user_locations() -> None:
    fn = convert_tree(parse_def("""
        def f(i):
            while i:
                break
    """), ("break",))
    for node in gast.walk(fn):
        if "lineno" in node._attributes:
            assert getattr(node, "lineno", None) is not None, gast.dump(node)
    assert fn.body[0].lineno == 3  # brk = False: at the loop
    assert fn.body[1].body[0].lineno == 4  # brk = True: at the break


@functools.cache
def _converted(name: str, passes: tuple[str, ...]):
    return converted(getattr(cases, name), passes)


_WITH_BREAK = [f.__name__ for f in cases.CASES]


@pytest.mark.parametrize("passes", [("break",), ("break", "continue", "return")])
@pytest.mark.parametrize("name", _WITH_BREAK)
@settings(max_examples=25, deadline=None)
@given(x=st.integers(-12, 12), y=st.integers(-12, 12))
def test_same_results_as_original(name: str, passes: tuple, x: int, y: int) -> None:
    original = getattr(cases, name)
    assert outcome(_converted(name, passes), x, y) == outcome(original, x, y)


def test_convert_returns_the_function() -> None:
    fn = parse_def("def f():\n    pass")
    from jump_lowering_support import context_for
    assert break_statements.convert(fn, context_for(fn)) is fn
    assert compile_tree(fn)() is None
