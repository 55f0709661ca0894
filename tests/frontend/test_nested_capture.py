"""A tf.function defined and called inside another's trace may use the enclosing trace's
tensors (TensorFlow allows it): they become captured inputs that the call passes."""
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InaccessibleTensorError


def _program(x, w, decorate):
    y = x * 2.0

    def inner(z):
        return z * y * w + x
    inner = decorate(inner)
    with tf.GradientTape() as tape:
        tape.watch(x)
        r = inner(x)
        if x > 0:
            r = r + inner(r)
    return r, tape.gradient(r, [x, w])


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_inner_function_uses_the_outer_traces_tensors(backend):
    w = tf.Variable(0.5)
    staged = tf.function(lambda x: _program(x, w, tf.function), backend=backend)
    r, (gx, gw) = staged(tf.constant(3.0))
    er, (egx, egw) = _program(tf.constant(3.0), w, lambda f: f)
    np.testing.assert_allclose([r.numpy(), gx.numpy(), gw.numpy()],
                               [er.numpy(), egx.numpy(), egw.numpy()], rtol=1e-6)


def test_a_tensor_of_a_finished_trace_is_still_an_error():
    kept = []

    @tf.function
    def first(x):
        kept.append(x * 2.0)
        return x

    @tf.function
    def second(x):
        return x + kept[0]

    first(tf.constant(1.0))
    with pytest.raises(InaccessibleTensorError, match="belongs to another graph"):
        second(tf.constant(1.0))
