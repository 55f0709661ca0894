"""Python builtins on tensors inside converted code (AutoGraph's py_builtins): abs, float,
int, len, range and print behave as Python on Python values and eager tensors and become
tensor ops on the symbolic tensors of a trace."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf


def uses_abs(x):
    return abs(x)


def uses_float_and_int(x):
    return float(x), int(x), float(int(x))


def range_outside_the_for(n):
    s = tf.constant(0)
    r = range(1, n, 2)
    for i in r:
        s += i
    return s


def range_as_a_tensor(n):
    return tf.reduce_sum(range(n))


def python_range_list(n):
    return list(range(n))


def len_of_tensor(x):
    return len(x)


def int_with_base(x):
    return int(x, 2)


def test_abs_of_a_symbolic_tensor_is_tf_abs():
    f = tf.function(uses_abs, backend="reference")
    np.testing.assert_array_equal(f(tf.constant([-1.5, 2.0])).numpy(), [1.5, 2.0])
    assert uses_abs(-3) == 3


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_float_and_int_of_a_symbolic_tensor_cast_as_autograph(backend):
    a, b, c = tf.function(uses_float_and_int, backend=backend)(tf.constant(-2.7))
    assert (a.dtype, b.dtype, c.dtype) == (tf.float32, tf.int32, tf.float32)
    assert (float(a), int(b), float(c)) == (pytest.approx(-2.7), -2, -2.0)  # int truncates


def test_float_and_int_of_eager_and_python_values_are_python():
    assert uses_float_and_int(tf.constant(2.5)) == (2.5, 2, 2.0)
    out = tf.function(uses_float_and_int, backend="reference")(3.5)  # a Python arg
    assert [float(v) for v in out] == [3.5, 3.0, 3.0]


def test_int_with_a_base_of_a_symbolic_tensor_is_a_clear_error():
    with pytest.raises(TypeError, match="^int\\(\\) can't convert non-string with explicit base"):
        tf.function(int_with_base, backend="reference")(tf.constant(1))


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_range_of_a_tensor_bound_outside_a_for_stages_like_tf_range(backend):
    assert int(tf.function(range_outside_the_for, backend=backend)(tf.constant(6))) == 9
    assert int(tf.function(range_as_a_tensor, backend="reference")(tf.constant(5))) == 10


def test_range_of_python_int_is_python():
    assert [int(v) for v in tf.function(python_range_list)(3)] == [0, 1, 2]


def test_len_is_static_when_the_trace_knows_it():
    assert int(tf.function(len_of_tensor, backend="reference")(tf.constant([1, 2, 3]))) == 3
    dynamic = tf.function(len_of_tensor, backend="reference",
                          input_signature=[tf.TensorSpec([None], tf.float32)])
    assert int(dynamic(tf.constant([1.0, 2.0]))) == 2


COUNTER = tf.Variable(1.0)


def prints_values(x, k):
    print("python", k)
    print("tensor", x)
    print("variable", COUNTER)
    return x


def test_print_runs_python_values_at_trace_time_and_tensors_at_every_call(capsys):
    f = tf.function(prints_values, backend="reference")
    f(tf.constant(1.0), 7)
    COUNTER.assign(2.0)
    f(tf.constant(2.0), 7)
    out = capsys.readouterr().out.splitlines()
    assert out.count("python 7") == 1  # traced once
    assert [line for line in out if line.startswith("tensor")] == ["tensor 1", "tensor 2"]
    assert [line for line in out if line.startswith("variable")] == ["variable 1",
                                                                     "variable 2"]
