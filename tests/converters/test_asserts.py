"""``assert`` in converted code: Python's AssertionError for Python values, a staged runtime
assertion (InvalidArgumentError when it fails) for symbolic tensors."""
from __future__ import annotations

import inspect

import gast
import pytest

import stagecraft as tf
from stagecraft.converters import api
from stagecraft.converters.operators import assert_stmt
from stagecraft.converters.passes import asserts, return_statements
from stagecraft.errors import InvalidArgumentError


def positive(x):
    assert x > 0, "x must be positive"
    return x * 2


def no_message(x):
    assert x > 0
    return x


def lazy_message(x, log):
    assert x > 0, log.append("evaluated") or f"bad x: {x}"
    return x


def in_loop(x, n):
    s = tf.constant(0)
    for i in tf.range(n):
        assert i < x, "i reached x"
        s += i
    return s


def in_branch(x):
    if x > 0:
        assert x < 10, "x too large"
        x = x + 1
    return x


def numeric(x):
    assert x, "x is zero"
    return x


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


# ------------------------------------------------------------------ the pass

def test_assert_becomes_assert_stmt_with_a_lazy_message() -> None:
    code = api.to_code(positive)
    assert "sc__.assert_stmt((x > 0), (lambda : 'x must be positive'))" in code
    assert "assert " not in code


def test_assert_without_message_names_its_line_and_test() -> None:
    code = api.to_code(no_message)
    loc = f"{no_message.__code__.co_filename}:{_line(no_message, 'assert x')}"
    assert f"sc__.assert_stmt((x > 0), None, '{loc}: (x > 0)')" in code


def test_the_pass_runs_after_return_lowering() -> None:
    names = [p.__name__.rsplit(".", 1)[-1] for p in api.PIPELINE]
    assert names.index("asserts") == names.index("return_statements") + 1
    assert api.PIPELINE.index(asserts) > api.PIPELINE.index(return_statements)


def test_calls_in_the_test_and_message_are_converted() -> None:
    def f(x):
        assert abs(x) < 3, str(x)
        return x
    code = api.to_code(f)
    assert "sc__.assert_stmt((sc__.converted_call(abs, (x,), {}) < 3), " \
           "(lambda : sc__.converted_call(str, (x,), {})))" in code


def test_nested_function_asserts_are_converted_too() -> None:
    tree = gast.parse("def f(x):\n    def g(y):\n        assert y\n    return g").body[0]
    from stagecraft.converters.context import Context, Namer
    out = asserts.convert(tree, Context("f.py", "f", Namer(set())))
    assert not any(isinstance(n, gast.Assert) for n in gast.walk(out))


# ------------------------------------------------------------------ Python mode

def test_python_values_raise_assertion_error_like_python() -> None:
    converted = api.convert(positive)
    assert converted(3) == 6
    with pytest.raises(AssertionError) as e:
        converted(-1)
    assert e.value.args == ("x must be positive",)
    with pytest.raises(AssertionError) as e:
        api.convert(no_message)(0)
    assert e.value.args == ()  # exactly what a bare `assert` raises


def test_eager_tensors_run_the_python_assert() -> None:
    converted = api.convert(positive)
    assert converted(tf.constant(2)).numpy() == 4
    with pytest.raises(AssertionError, match="x must be positive"):
        converted(tf.constant(-2))


def test_python_mode_inside_a_function_raises_at_trace_time() -> None:
    f = tf.function(positive)
    assert f(2).numpy() == 4
    with pytest.raises(AssertionError, match="x must be positive"):
        f(-2)  # a Python int: the assert runs while tracing


def test_the_message_is_only_evaluated_when_the_assert_fails() -> None:
    log: list = []
    converted = api.convert(lazy_message)
    assert converted(1, log) == 1
    assert log == []
    with pytest.raises(AssertionError, match="bad x: -1"):
        converted(-1, log)
    assert log == ["evaluated"]


# ------------------------------------------------------------------ staged mode

def test_staged_assert_fails_on_the_failing_call_only() -> None:
    f = tf.function(positive)
    assert f(tf.constant(3)).numpy() == 6
    with pytest.raises(InvalidArgumentError, match="x must be positive"):
        f(tf.constant(-1))
    assert f(tf.constant(5)).numpy() == 10  # the same graph: a later valid call succeeds
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(InvalidArgumentError, match="x must be positive"):
        f(tf.constant(0))


def test_staged_assert_is_not_an_assertion_error() -> None:
    f = tf.function(positive)
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant(-1))
    assert not isinstance(e.value, AssertionError)


def test_staged_assert_without_message_says_where_and_what() -> None:
    f = tf.function(no_message)
    loc = f"{no_message.__code__.co_filename}:{_line(no_message, 'assert x')}"
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant(-4))
    assert f"Assertion failed at {loc}: (x > 0)" in str(e.value)
    assert f(tf.constant(4)).numpy() == 4


def test_staged_assert_in_a_staged_loop_checks_every_iteration() -> None:
    f = tf.function(in_loop)
    assert f(tf.constant(10), tf.constant(4)).numpy() == 6
    with pytest.raises(InvalidArgumentError, match="i reached x"):
        f(tf.constant(2), tf.constant(4))
    assert f(tf.constant(3), tf.constant(3)).numpy() == 3


def test_staged_assert_in_a_staged_branch_only_checks_when_taken() -> None:
    f = tf.function(in_branch)
    assert f(tf.constant(-50)).numpy() == -50  # the branch is not taken: no check
    assert f(tf.constant(3)).numpy() == 4
    with pytest.raises(InvalidArgumentError, match="x too large"):
        f(tf.constant(12))


def test_staged_numeric_test_means_nonzero() -> None:
    f = tf.function(numeric)
    assert f(tf.constant(2.5)).numpy() == 2.5
    with pytest.raises(InvalidArgumentError, match="x is zero"):
        f(tf.constant(0.0))


def test_staged_non_scalar_test_is_rejected_with_a_hint() -> None:
    f = tf.function(positive)
    with pytest.raises(ValueError, match=r"reduce_all\(x > 0\)"):
        f(tf.constant([1, 2]))


def test_assert_stmt_directly() -> None:
    assert_stmt(True, lambda: "unused")
    with pytest.raises(AssertionError, match="direct"):
        assert_stmt(0, lambda: "direct")
    with pytest.raises(InvalidArgumentError, match="in graph"):
        @tf.function(autograph=False)
        def g(x):
            assert_stmt(x > 0, lambda: "in graph")
            return x
        g(tf.constant(-1))
