"""A loop's gradient keeps one row per iteration for each loop variable. A variable that grows
or shrinks across iterations (a dynamic_size TensorArray; its gradient, walked backwards) is
kept padded to the larger of its first and final shapes, with its shape per iteration, so it
differentiates like the eager program, also twice; one that is larger inside the loop than
at both ends cannot be differentiated yet: a clear run-time error, never a wrong gradient.
Variables whose dims are unknown while tracing but fixed when running differentiate as
before."""
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


def test_second_order_through_a_growing_tensor_array():
    w = tf.Variable(0.7)

    def f(n):
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
                h = tf.constant([1.0, 2.0])
                for i in tf.range(n):
                    h = tf.sin(h * w)
                    ta = ta.write(i, h)
                y = tf.reduce_sum(ta.stack())
            g = inner.gradient(y, w)
        return outer.gradient(g, w)

    staged = tf.function(f, backend="reference")(tf.constant(4))
    np.testing.assert_allclose(staged.numpy(), f(tf.constant(4)).numpy(), rtol=1e-5)


W2 = tf.Variable(2.0)


def _shrink(x):
    with tf.GradientTape() as tape:
        while tf.size(x) > 2:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))])
            x = x[1:] * W2
        y = tf.reduce_sum(x)
    return tape.gradient(y, W2)


def test_a_shrinking_loop_variable_differentiates():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    staged = tf.function(_shrink, backend="reference")(x)
    np.testing.assert_allclose(staged.numpy(), _shrink(x).numpy(), rtol=1e-6)


def test_a_variable_larger_inside_the_loop_than_at_both_ends_is_a_clear_error():
    @tf.function(backend="reference")
    def f(x):
        with tf.GradientTape() as tape:
            i = tf.constant(0)
            while i < 2 and tf.reduce_sum(x) < 1e6:
                tf.autograph.experimental.set_loop_options(
                    shape_invariants=[(x, tf.TensorShape([None]))])
                if i == 0:
                    x = tf.concat([x, x], 0) * W2
                else:
                    x = x[2:] * W2
                i += 1
            y = tf.reduce_sum(x)
        return tape.gradient(y, W2)

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^while_loop gradient: a loop variable is larger in some iteration"):
        f(tf.constant([1.0, 2.0]))


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
