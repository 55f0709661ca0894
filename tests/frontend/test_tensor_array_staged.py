"""TensorArray in staged loops without element_shape (learned from the first write, as TF's
infer_shape) and gradients through write/read/stack/unstack/gather/scatter (issue 14, item 3):
staged results and gradients equal the eager ones and finite differences, on the reference
interpreter and on Numba."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

BACKENDS = ["reference", "numba"]
RNG = np.random.RandomState(0)
W = tf.constant(RNG.randn(3, 3) * 0.5)          # float64: finite differences are accurate
XS = tf.constant(RNG.randn(5, 3))


def rnn(x, size_from_tensor=True):
    """The TF RNN idiom: a TensorArray written in a for-over-tf.range loop, then stacked."""
    T = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float64, size=T if size_from_tensor else 5)
    h = tf.zeros([3], tf.float64)
    for t in tf.range(T):
        h = tf.tanh(tf.reduce_sum(W * h, axis=1) + x[t])
        ta = ta.write(t, h)
    return tf.reduce_sum(ta.stack() ** 2)


def while_loop_rnn(x):
    """The same with an explicit tf.while_loop (no AutoGraph)."""
    T = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float64, size=T)

    def body(t, h, ta):
        h = tf.tanh(tf.reduce_sum(W * h, axis=1) + x[t])
        return t + 1, h, ta.write(t, h)

    _, _, ta = tf.while_loop(lambda t, h, ta: t < T, body,
                             (tf.constant(0), tf.zeros([3], tf.float64), ta))
    return tf.reduce_sum(ta.stack() ** 2) + tf.reduce_sum(ta.read(T - 1))


def accessors(x):
    """unstack, read, gather, scatter and concat in one function."""
    ta = tf.TensorArray(tf.float64, size=5).unstack(x * x)
    picked = ta.gather([4, 0]) * 2.0
    tb = tf.TensorArray(tf.float64, size=4).scatter([3, 1], picked)
    tb = tb.write(0, ta.read(2)).write(2, tf.sin(ta.read(1)))
    return tf.reduce_sum(tb.stack() * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)[:, None]) \
        + tf.reduce_sum(tb.concat())


def _grad(fn, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x)


def _finite_differences(fn, x, eps=1e-6):
    base = x.numpy()
    out = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        hi, lo = base.copy(), base.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (float(fn(tf.constant(hi))) - float(fn(tf.constant(lo)))) / (2 * eps)
    return out


@pytest.mark.parametrize("fn", [rnn, while_loop_rnn, accessors])
def test_eager_gradients_match_finite_differences(fn):
    _, g = _grad(fn, XS)
    np.testing.assert_allclose(g.numpy(), _finite_differences(fn, XS), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [rnn, while_loop_rnn, accessors])
def test_staged_values_and_gradients_equal_eager(fn, backend):
    staged = tf.function(fn, backend=backend, input_signature=[tf.TensorSpec([None, 3],
                                                                             tf.float64)])
    want_y, want_g = _grad(fn, XS)
    # The tape outside the staged call (its backward is a staged function) ...
    y, g = _grad(staged, XS)
    np.testing.assert_allclose(y.numpy(), want_y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), want_g.numpy(), rtol=1e-10, atol=1e-12)

    # ... and inside it (the VJPs are traced into the function).
    @tf.function(backend=backend, input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def inside(x):
        return _grad(fn, x)

    y, g = inside(XS)
    np.testing.assert_allclose(g.numpy(), want_g.numpy(), rtol=1e-10, atol=1e-12)


def test_fixed_int_size_without_element_shape_in_a_tensor_loop():
    f = tf.function(lambda x: _grad(lambda v: rnn(v, size_from_tensor=False), x),
                    backend="reference")
    want = _grad(lambda v: rnn(v, size_from_tensor=False), XS)
    for a, b in zip(f(XS), want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_dynamic_size_in_a_staged_while_loop_equals_eager():
    def squares(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        def body(i, ta):
            return i + 1, ta.write(i, tf.fill([2], tf.cast(i, tf.float32)))

        _, ta = tf.while_loop(lambda i, ta: i < n, body, (tf.constant(0), ta))
        return ta.stack(), ta.size()

    want = squares(tf.constant(3))
    for backend in BACKENDS:
        got = tf.function(squares, backend=backend)(tf.constant(3))
        assert got[0].numpy().tolist() == want[0].numpy().tolist() and int(got[1]) == 3


def test_dynamic_size_written_past_its_end_grows_with_zero_rows():
    def f(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(2 * i, i + 1)   # every other index: the gaps are zeros, as in TF
        return ta.stack(), ta.size()

    for backend in BACKENDS:
        values, size = tf.function(f, backend=backend)(tf.constant(3))
        assert values.numpy().tolist() == [1, 0, 2, 0, 3] and int(size) == 5


def test_staged_element_shape_is_learned_and_kept():
    seen = []

    @tf.function(backend="reference")
    def f(n):
        ta = tf.TensorArray(tf.float32, size=n)
        for i in tf.range(n):
            ta = ta.write(i, tf.fill([2, 3], tf.cast(i, tf.float32)))
        seen.append((ta.element_shape.as_list(), ta.stack().shape.as_list()))
        return ta.stack()

    assert f(tf.constant(2)).numpy()[:, 0, 0].tolist() == [0.0, 1.0]
    assert seen == [([2, 3], [None, 2, 3])]


def test_unknown_element_dims_before_a_loop_are_a_clear_error():
    @tf.function(input_signature=[tf.TensorSpec([None])], backend="reference")
    def f(x):
        ta = tf.TensorArray(tf.float32, size=2)
        for i in tf.range(2):
            ta = ta.write(i, x)
        return ta.stack()

    with pytest.raises(ValueError, match="not fully known.*Write one element before the loop"):
        f(tf.constant([1.0]))
