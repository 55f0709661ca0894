"""A loop's gradient keeps one row per iteration for each loop variable. A variable that grows
across iterations (a dynamic_size TensorArray) is kept padded to its final shape with its
shape per iteration, so it differentiates like the eager program; one that shrinks cannot be
differentiated yet (nor, yet, twice through a growing one): a clear run-time error, never a
wrong gradient. Variables whose dims are unknown while tracing but fixed when running
differentiate as before."""
import numpy as np
import pytest

import stagecraft as tf


W = tf.Variable([[0.5, 0.1, 0.2]] * 3)


def _rnn(n, dynamic, w=W):
    with tf.GradientTape() as tape:
        ta = tf.TensorArray(tf.float32, size=0 if dynamic else n, dynamic_size=dynamic)
        h = tf.ones([2, 3])
        for i in tf.range(n):
            h = tf.tanh(tf.matmul(h, w))
            ta = ta.write(i, h)
        y = tf.reduce_sum(ta.stack())
    return tape.gradient(y, w)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_a_growing_tensor_array_differentiates(backend):
    staged = tf.function(lambda n: _rnn(n, True), backend=backend)(tf.constant(3))
    np.testing.assert_allclose(staged.numpy(), _rnn(tf.constant(3), True).numpy(), rtol=1e-5)


def test_a_shrinking_loop_variable_is_a_clear_error():
    w = tf.Variable(2.0)

    @tf.function(backend="reference")
    def f(x):
        with tf.GradientTape() as tape:
            while tf.size(x) > 2:
                tf.autograph.experimental.set_loop_options(
                    shape_invariants=[(x, tf.TensorShape([None]))])
                x = x[1:] * w
            y = tf.reduce_sum(x)
        return tape.gradient(y, w)

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^while_loop gradient: a loop variable is larger"):
        f(tf.constant([1.0, 2.0, 3.0, 4.0]))


def test_fixed_size_array_sized_by_a_tensor_differentiates():
    staged = tf.function(lambda n: _rnn(n, False), backend="reference")(tf.constant(3))
    np.testing.assert_allclose(staged.numpy(), _rnn(tf.constant(3), False).numpy(), rtol=1e-5)


def test_dims_unknown_while_tracing_but_fixed_when_running_differentiate():
    w = tf.Variable(0.9)

    @tf.function(input_signature=[tf.TensorSpec([None])])
    def f(x):
        with tf.GradientTape() as tape:
            i = tf.constant(0)
            while i < 3 and tf.reduce_sum(x) < 1e6:  # data-dependent: recorded separately
                x = tf.tanh(x * w)
                i += 1
            y = tf.reduce_sum(x)
        return tape.gradient(y, w)

    x = tf.constant([0.5, -1.0, 2.0])
    with tf.GradientTape() as tape:
        h = x
        for _ in range(3):
            h = tf.tanh(h * w)
        want = tape.gradient(tf.reduce_sum(h), w)
    np.testing.assert_allclose(f(x).numpy(), want.numpy(), rtol=1e-5)
