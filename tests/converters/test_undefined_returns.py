"""Functions that return a value on some paths and fall through (None) on others, where a
tensor decides the path: TensorFlow rejects them ("else branch must also have a return"),
and so does stagecraft, naming the return value rather than a generated variable."""
from __future__ import annotations

import contextlib

import pytest

import stagecraft as tf


def returns_in_if_only(x):
    if x > 0:
        return x * 2


def return_possibly_undefined(x):  # TensorFlow's early_return_test sample
    if x > 0:
        if x < 5:
            return x
    else:
        return x * x * x


def returns_in_if_then_falls_off(x):
    if x > 0:
        return x * 2
    x = x + 1


def returns_inside_a_tensor_loop_only(n):
    for i in tf.range(n):
        if i > 2:
            return i


def returns_in_all_paths_inside_context_managers(x):
    with contextlib.nullcontext():
        if x > 0:
            if x < 5:
                with contextlib.nullcontext():
                    return x
            else:
                return x * x
        else:
            return x * x * x


@pytest.mark.parametrize("fn", [returns_in_if_only, return_possibly_undefined,
                                returns_in_if_then_falls_off])
def test_return_missing_from_the_else_branch_is_an_error(fn):
    with pytest.raises(ValueError) as e:
        tf.function(fn, backend="reference")(tf.constant(3))
    first = str(e.value).splitlines()[0]
    assert "else branch must also have a return statement" in first
    assert "retval" not in first


def test_return_inside_a_loop_without_one_after_it_is_an_error():
    with pytest.raises(ValueError) as e:
        tf.function(returns_inside_a_tensor_loop_only, backend="reference")(tf.constant(5))
    assert "must also have a return statement" in str(e.value)


def test_the_same_functions_run_in_python():
    assert returns_in_if_only(-1) is None
    assert return_possibly_undefined(7) is None
    assert tf.function(returns_in_if_only, backend="reference")(3).numpy() == 6


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_returns_on_every_path_inside_context_managers(backend):
    f = tf.function(returns_in_all_paths_inside_context_managers, backend=backend)
    assert [int(f(tf.constant(v))) for v in (0, 3, 5)] == [0, 3, 25]
