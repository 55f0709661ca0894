"""Functions that refer to themselves (recursion under a Python-valued base case), converted
by AutoGraph: the converted code must find its own name where the original does (issue 14,
item 4: a NameError 'cannot access free variable' before)."""
from __future__ import annotations

import pytest

import stagecraft as tf


@tf.function
def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def halve_until(x, depth):
    if depth == 0:
        return x
    if x > 0:  # a tensor if in every level
        y = x - 1.0
    else:
        y = x + 1.0
    return halve_until(y / 2.0, depth - 1)


def staged_halve_until(x):
    return halve_until(x, 3)


def make_nested_recursion():
    def walk(x, depth):
        if depth == 0:
            return x
        return walk(x * 2.0, depth - 1)
    return walk


def test_recursive_function_with_python_argument():
    assert int(fact(5)) == 120


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_recursive_helper_with_tensor_ifs_and_python_depth(backend):
    f = tf.function(staged_halve_until, backend=backend)
    expected = halve_until(5.0, 3)
    assert float(f(tf.constant(5.0))) == pytest.approx(expected)


def test_recursive_nested_function_uses_its_closure_cell():
    walk = make_nested_recursion()
    assert float(tf.function(walk, backend="reference")(tf.constant(1.0), 3)) == 8.0


def sign_sum(x, depth):
    if x > 0:
        s = x
    else:
        s = -x
    if depth == 0:
        return s
    return s + sign_sum(x - 1.0, depth - 1)


def test_variable_defined_in_both_branches_of_a_recursive_function():
    f = tf.function(sign_sum, backend="reference")
    assert float(f(tf.constant(1.0), 2)) == 1.0 + 0.0 + 1.0
