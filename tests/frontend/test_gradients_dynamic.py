"""Gradients inside functions traced for unknown dimensions (input_signature with None)."""
import numpy as np

import stagecraft as tf


def _grad_in_function(reduction):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = reduction(x * x)
        return tape.gradient(y, x)
    return f


def test_reduce_mean_gradient_with_unknown_dims_matches_eager():
    f = _grad_in_function(lambda t: tf.reduce_mean(t, axis=1))
    for shape in [(2, 3), (4, 1), (1, 5)]:
        x = tf.constant(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_mean(x * x, axis=1)
        np.testing.assert_allclose(f(x).numpy(), tape.gradient(y, x).numpy(), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1


def test_reduce_sum_and_max_gradients_with_unknown_dims():
    x = tf.constant([[1.0, 3.0], [2.0, -1.0]])
    np.testing.assert_allclose(_grad_in_function(tf.reduce_sum)(x).numpy(), 2 * x.numpy())
    g = _grad_in_function(lambda t: tf.reduce_max(t, axis=0))(x).numpy()
    np.testing.assert_allclose(g, [[0.0, 6.0], [4.0, 0.0]])
