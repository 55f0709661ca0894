"""``tf.autograph``: to_code, to_graph, set_verbosity, trace and the ``experimental``
namespace (Feature, do_not_convert, set_loop_options reaching the staged loop)."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf


def absolute(x):
    if x > 0:
        return x
    return -x


def grows_in_a_while(n):
    x = tf.constant([1])
    i = tf.constant(0)
    while i < n:
        tf.autograph.experimental.set_loop_options(
            shape_invariants=[(x, tf.TensorShape([None]))], parallel_iterations=4)
        x = tf.concat([x, x], 0)
        i += 1
    return x


def grows_without_invariants(n):
    x = tf.constant([1])
    for _ in tf.range(n):
        x = tf.concat([x, x], 0)
    return x


def capped_loop(n):
    i = tf.constant(0)
    while i < n:
        tf.autograph.experimental.set_loop_options(maximum_iterations=4)
        i += 1
    return i


@tf.autograph.experimental.do_not_convert
def unconverted(x):
    if x > 0:
        return x
    return -x


def calls_unconverted(x):
    return unconverted(x)


def test_to_code_and_to_graph():
    assert "sc__.if_stmt" in tf.autograph.to_code(absolute)
    assert "sc__.if_stmt" in tf.autograph.to_code(tf.function(absolute))
    g = tf.autograph.to_graph(absolute)
    assert g(-2) == 2  # Python values: runs as Python
    assert int(tf.function(g, backend="reference")(tf.constant(-5))) == 5


def test_feature_enum_is_accepted_by_function():
    features = tf.autograph.experimental.Feature
    assert {f.name for f in features} >= {"ALL", "ASSERT_STATEMENTS", "BUILTIN_FUNCTIONS",
                                          "EQUALITY_OPERATORS", "LISTS", "NAME_SCOPES",
                                          "AUTO_CONTROL_DEPS"}
    f = tf.function(absolute, backend="reference",
                    experimental_autograph_options=(features.EQUALITY_OPERATORS,))
    assert int(f(tf.constant(-1))) == 1


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_set_loop_options_shape_invariants_reach_the_while_loop(backend):
    out = tf.function(grows_in_a_while, backend=backend)(tf.constant(3))
    np.testing.assert_array_equal(out.numpy(), np.ones(8, np.int32))
    with pytest.raises(ValueError, match="shape_invariants"):
        tf.function(grows_without_invariants, backend="reference")(tf.constant(3))


def test_set_loop_options_maximum_iterations():
    assert int(tf.function(capped_loop, backend="reference")(tf.constant(10))) == 4
    assert capped_loop(3) == 3  # as Python the directive does nothing


def test_do_not_convert_runs_the_function_unconverted():
    f = tf.function(calls_unconverted, backend="reference")
    assert int(f(-3)) == 3
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
        f(tf.constant(3))
    top = tf.function(unconverted, backend="reference")
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
        top(tf.constant(3))


def test_trace_and_set_verbosity(capsys):
    tf.autograph.set_verbosity(0)
    tf.autograph.trace("value", 3)
    assert capsys.readouterr().out == "value 3\n"
