"""The return pass: exact output for small snippets, same results as the original, and the
three jump passes together on random programs."""
from __future__ import annotations

import functools

import gast
import jump_lowering_cases as cases
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jump_lowering_support import (
    assert_jump_free,
    compile_source,
    compile_tree,
    convert_tree,
    converted,
    outcome,
    parse_def,
    programs,
    unparse,
)


def _after(source: str, passes: tuple = ("return",)) -> str:
    return unparse(convert_tree(parse_def(source), passes))


def test_single_final_return_is_left_alone() -> None:
    source = """
        def f(x):
            if x:
                y = 1
            else:
                y = 2
            return y
    """
    assert _after(source) == unparse(parse_def(source))


def test_return_in_branch_moves_rest_into_other_branch() -> None:
    assert _after("""
        def f(x):
            if x > 0:
                return x
            y = -x
            return y
    """) == """\
def f(x):
    retval = sc__.UndefinedReturnValue()
    if (x > 0):
        retval = x
    else:
        y = (- x)
        retval = y
    return retval"""


def test_falling_off_the_end_returns_none() -> None:
    assert _after("""
        def f(x):
            if x:
                return 1
    """) == """\
def f(x):
    retval = sc__.UndefinedReturnValue()
    if x:
        retval = 1
    else:
        retval = None
    return retval"""


def test_return_in_loop_extends_tests_and_guards_rest() -> None:
    assert _after("""
        def f(n, xs):
            while n:
                for x in xs:
                    if x:
                        return x
                    n -= 1
            return n
    """) == """\
def f(n, xs):
    do_return = False
    retval = sc__.UndefinedReturnValue()
    while ((not do_return) and n):
        for x in xs:
            EXTRA_TEST((not do_return))
            if x:
                retval = x
                do_return = True
            else:
                n -= 1
    if (not do_return):
        retval = n
        do_return = True
    return retval"""


def test_return_combines_with_break_extra_test() -> None:
    fn = convert_tree(parse_def("""
        def f(xs):
            for x in xs:
                if x:
                    break
                if g(x):
                    return x
            return 0
    """), ("break", "continue", "return"))
    loop = next(s for s in fn.body if isinstance(s, gast.For))
    extra = loop.sc_extra_test
    assert isinstance(extra, gast.BoolOp) and isinstance(extra.op, gast.And)
    assert [v.operand.id for v in extra.values] == ["do_return", "brk"]


def test_guard_after_loop_and_try() -> None:
    out = _after("""
        def f(xs):
            try:
                for x in xs:
                    if x:
                        return x
            finally:
                g()
            h()
    """)
    assert out == """\
def f(xs):
    do_return = False
    retval = sc__.UndefinedReturnValue()
    try:
        for x in xs:
            EXTRA_TEST((not do_return))
            if x:
                retval = x
                do_return = True
    finally:
        g()
    if (not do_return):
        h()
        retval = None
        do_return = True
    return retval"""


def test_nested_function_converted_as_its_own_function() -> None:
    out = _after("""
        def f(x):
            def g(y):
                if y:
                    return 1
                return 2
            h = lambda z: z
            return g(x)
    """)
    assert out == """\
def f(x):

    def g(y):
        retval = sc__.UndefinedReturnValue()
        if y:
            retval = 1
        else:
            retval = 2
        return retval
    h = (lambda z: z)
    return g(x)"""


def test_loop_else_is_guarded_when_return_stops_the_loop() -> None:
    out = _after("""
        def f(n):
            while n:
                return 1
            else:
                g()
            return 2
    """)
    assert "while ((not do_return) and n):" in out
    assert "else:\n        if (not do_return):\n            g()" in out


def test_names_avoid_user_names_and_locations_are_set() -> None:
    fn = convert_tree(parse_def("""
        def f(retval, do_return):
            if retval:
                return do_return
            for i in do_return:
                return i
    """), ("return",))
    out = unparse(fn)
    assert "do_return_1 = False" in out and "retval_1 = sc__.UndefinedReturnValue()" in out
    for node in gast.walk(fn):
        if "lineno" in node._attributes:
            assert getattr(node, "lineno", None) is not None, gast.dump(node)


def test_value_is_evaluated_before_the_flag_is_set() -> None:
    # If `return 10 // (x - i)` raises inside the try, the function has not returned.
    source = """
def f(x):
    for i in range(3):
        try:
            return 10 // (x - i)
        except ZeroDivisionError:
            pass
    return "none"
"""
    env: dict = {}
    exec(source, env)  # noqa: S102 - the original, to compare with
    lowered = compile_tree(convert_tree(parse_def(source)))
    assert [lowered(x) for x in range(-2, 4)] == [env["f"](x) for x in range(-2, 4)]
    assert lowered(0) == -10


@functools.cache
def _converted(name: str, passes: tuple[str, ...]):
    return converted(getattr(cases, name), passes)


_NAMES = [f.__name__ for f in cases.CASES]


@pytest.mark.parametrize("passes", [("return",), ("break", "continue", "return")])
@pytest.mark.parametrize("name", _NAMES)
@settings(max_examples=25, deadline=None)
@given(x=st.integers(-12, 12), y=st.integers(-12, 12))
def test_same_results_as_original(name: str, passes: tuple, x: int, y: int) -> None:
    original = getattr(cases, name)
    assert outcome(_converted(name, passes), x, y) == outcome(original, x, y)


@pytest.mark.parametrize("name", _NAMES)
def test_all_passes_leave_jump_free_code(name: str) -> None:
    from stagecraft.converters.source import function_tree
    fn, _, _ = function_tree(getattr(cases, name))
    assert_jump_free(convert_tree(fn))


_INPUTS = [(x, y) for x in (-4, -1, 0, 1, 2, 3, 6) for y in (-2, 0, 1, 3, 5)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs())
def test_random_programs_all_passes(source: str) -> None:
    original = compile_source(source)
    fn = convert_tree(gast.parse(source).body[0])
    assert_jump_free(fn)
    lowered = compile_tree(fn)
    for x, y in _INPUTS:
        assert outcome(lowered, x, y) == outcome(original, x, y), (source, unparse(fn), x, y)
