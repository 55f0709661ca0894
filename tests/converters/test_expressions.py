"""The expressions pass alone: and/or/not, conditional expressions and chained comparisons
become lazy runtime operator calls; single comparisons and other operators stay."""
from __future__ import annotations

from pass_snippets import after, expect
from stagecraft.converters.operators import logical
from stagecraft.converters.passes import expressions


def test_and_or_chains_nest_right_with_thunks():
    assert after(expressions, """
        def f(a, b, c):
            return a or b or c
    """) == expect("""
        def f(a, b, c):
            return sc__.or_((lambda : a), (lambda : sc__.or_((lambda : b), (lambda : c))))
    """)


def test_not_and_mixed_boolops():
    assert after(expressions, """
        def f(a, b):
            return not a and b
    """) == expect("""
        def f(a, b):
            return sc__.and_((lambda : sc__.not_(a)), (lambda : b))
    """)


def test_conditional_expression():
    assert after(expressions, """
        def f(a, b, c):
            return a if b else c
    """) == expect("""
        def f(a, b, c):
            return sc__.if_exp(b, (lambda : a), (lambda : c))
    """)


def test_chained_comparison_evaluates_each_operand_once():
    assert after(expressions, """
        def f(a, b):
            return 0 < g(a) <= b
    """) == expect("""
        def f(a, b):
            return sc__.compare_chain(0, (('<', (lambda : g(a))), ('<=', (lambda : b))))
    """)


def test_single_comparison_and_other_unary_ops_unchanged():
    assert after(expressions, """
        def f(a, b):
            return -a < b, a is not None, ~b
    """) == expect("""
        def f(a, b):
            return (((- a) < b), (a is not None), (~ b))
    """)


def test_nested_inside_if_test_and_loops():
    out = after(expressions, """
        def f(a, b):
            while a and b:
                if not a:
                    a = b if a else 0
            return a
    """)
    assert "while sc__.and_((lambda : a), (lambda : b)):" in out
    assert "if sc__.not_(a):" in out
    assert "a = sc__.if_exp(a, (lambda : b), (lambda : 0))" in out


def test_runtime_operators_on_python_values():
    calls = []

    def thunk(v):
        return lambda: calls.append(v) or v

    assert logical.and_(thunk(0), thunk(1)) == 0 and calls == [0]
    assert logical.or_(thunk(2), thunk(3)) == 2 and calls == [0, 2]
    assert logical.compare_chain(1, (("<", thunk(5)), (">", thunk(9)))) is False
    assert calls == [0, 2, 5, 9]
    assert logical.compare_chain(1, (("<", thunk(0)), (">", thunk(7)))) is False
    assert calls == [0, 2, 5, 9, 0]  # stops at the first false link
    assert logical.if_exp(0, thunk("yes"), thunk("no")) == "no"
    assert logical.not_([]) is True
