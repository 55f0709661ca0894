"""The continue pass: exact output for small snippets, and same results as the original."""
from __future__ import annotations

import functools

import jump_lowering_cases as cases
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jump_lowering_support import convert_tree, converted, outcome, parse_def, unparse


def _after(source: str, passes: tuple = ("continue",)) -> str:
    return unparse(convert_tree(parse_def(source), passes))


def test_continue_in_if_guards_rest_of_body() -> None:
    assert _after("""
        def f(xs, s):
            for x in xs:
                if x < 0:
                    continue
                s += x
            return s
    """) == """\
def f(xs, s):
    for x in xs:
        cont = False
        if (x < 0):
            cont = True
        if (not cont):
            s += x
    return s"""


def test_guards_every_enclosing_block_up_to_the_loop() -> None:
    assert _after("""
        def f(n):
            while n:
                n -= 1
                if a:
                    if b:
                        continue
                    c()
                d()
    """) == """\
def f(n):
    while n:
        cont = False
        n -= 1
        if a:
            if b:
                cont = True
            if (not cont):
                c()
        if (not cont):
            d()"""


def test_loop_header_is_unchanged() -> None:
    fn = convert_tree(parse_def("""
        def f(xs):
            for x in xs:
                continue
    """), ("continue",))
    assert not hasattr(fn.body[0], "sc_extra_test")
    assert unparse(fn) == "def f(xs):\n    for x in xs:\n        cont = False\n        cont = True"


def test_continue_in_else_of_inner_loop_belongs_to_outer_loop() -> None:
    out = _after("""
        def f(xs):
            for x in xs:
                for y in xs:
                    if y:
                        break
                else:
                    continue
                g(x)
    """, ("break", "continue"))
    assert out == """\
def f(xs):
    for x in xs:
        cont = False
        brk = False
        for y in xs:
            EXTRA_TEST((not brk))
            if y:
                brk = True
        if (not brk):
            cont = True
        if (not cont):
            g(x)"""


def test_break_and_continue_flags_are_distinct_per_loop() -> None:
    out = _after("""
        def f(xs, cont):
            for x in xs:
                for y in xs:
                    if y:
                        continue
                    g()
                if x:
                    continue
                h()
    """)
    assert "cont_1 = False" in out and "cont_2 = False" in out
    assert "continue" not in out


@functools.cache
def _converted(name: str, passes: tuple[str, ...]):
    return converted(getattr(cases, name), passes)


_NAMES = [f.__name__ for f in cases.CASES]


@pytest.mark.parametrize("passes", [("continue",), ("break", "continue")])
@pytest.mark.parametrize("name", _NAMES)
@settings(max_examples=20, deadline=None)
@given(x=st.integers(-12, 12), y=st.integers(-12, 12))
def test_same_results_as_original(name: str, passes: tuple, x: int, y: int) -> None:
    original = getattr(cases, name)
    assert outcome(_converted(name, passes), x, y) == outcome(original, x, y)
