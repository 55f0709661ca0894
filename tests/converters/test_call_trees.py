"""The call-trees pass alone: calls go through ``sc__.converted_call`` (positional args as a
tuple, keywords as a dict, starred and double-starred kept), frame-sensitive builtins and the
runtime's own calls stay direct."""
from __future__ import annotations

import pytest

from pass_snippets import after, expect
from stagecraft.converters.passes import call_trees


def test_positional_keyword_and_starred_arguments():
    assert after(call_trees, """
        def f(x, *args, **kw):
            return g(x, *args, k=1, **kw)
    """) == expect("""
        def f(x, *args, **kw):
            return sc__.converted_call(g, (x, *args), {'k': 1, **kw})
    """)


def test_nested_calls_and_methods():
    assert after(call_trees, """
        def f(x):
            return obj.m(h(x))
    """) == expect("""
        def f(x):
            return sc__.converted_call(obj.m, (sc__.converted_call(h, (x,), {}),), {})
    """)


@pytest.mark.parametrize("builtin", ["super", "locals", "globals", "vars", "eval", "exec",
                                     "dir"])
def test_frame_sensitive_builtins_stay_direct(builtin):
    out = after(call_trees, f"""
        def f(x):
            return {builtin}()
    """)
    assert out.splitlines()[1] == f"    return {builtin}()"


def test_super_method_call_keeps_super_direct():
    assert after(call_trees, """
        def f(self):
            return super().m(1)
    """) == expect("""
        def f(self):
            return sc__.converted_call(super().m, (1,), {})
    """)


def test_runtime_calls_are_left_alone():
    assert after(call_trees, """
        def f(x):
            return sc__.if_exp(x, lambda: g(), lambda: 0)
    """) == expect("""
        def f(x):
            return sc__.if_exp(x, (lambda : sc__.converted_call(g, (), {})), (lambda : 0))
    """)


def test_generated_nodes_get_the_call_location():
    from pass_snippets import convert_one
    import gast
    fn = convert_one(call_trees, """
        def f(x):
            y = 1
            return g(
                x)
    """)
    call = fn.body[1].value
    assert call.lineno == 4  # (the snippet's first line is blank)
    tuple_, dict_ = call.args[1], call.args[2]
    assert (tuple_.lineno, dict_.lineno) == (4, 4)
    assert isinstance(tuple_, gast.Tuple) and isinstance(dict_, gast.Dict)
