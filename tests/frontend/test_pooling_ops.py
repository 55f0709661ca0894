"""tf.nn pooling against a direct-loop reference written from TensorFlow's definition (each
output position's window; SAME pads so the output has ceil(size / stride) positions, the odd
element after; max ignores padding, average divides by the window's real elements), eagerly
and staged on the reference interpreter and on Numba; gradients against finite differences,
with ties routed to the first maximum of the window as TensorFlow does."""
from __future__ import annotations

import math

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(18)


def _reference(x, ksize, strides, padding, kind):
    """Loops over every output position and every window element (channels last)."""
    n = x.ndim - 2
    sizes = x.shape[1:-1]
    if padding == "VALID":
        out = [(d - k) // s + 1 for d, k, s in zip(sizes, ksize, strides)]
        before = [0] * n
    else:
        out = [math.ceil(d / s) for d, s in zip(sizes, strides)]
        before = [max((o - 1) * s + k - d, 0) // 2
                  for o, d, k, s in zip(out, sizes, ksize, strides)]
    y = np.zeros([x.shape[0], *out, x.shape[-1]])
    for b in range(x.shape[0]):
        for pos in np.ndindex(*out):
            for c in range(x.shape[-1]):
                vals = []
                for off in np.ndindex(*ksize):
                    at = [p * s + o - lo for p, s, o, lo in zip(pos, strides, off, before)]
                    if all(0 <= a < d for a, d in zip(at, sizes)):
                        vals.append(x[(b, *at, c)])
                y[(b, *pos, c)] = max(vals) if kind == "max" else sum(vals) / len(vals)
    return y


# (input shape, ksize, strides, padding)
CASES = [
    ((2, 7, 3), [3], [2], "SAME"),
    ((2, 7, 3), [2], [3], "VALID"),
    ((2, 5, 6, 2), [3, 3], [2, 2], "SAME"),
    ((1, 6, 5, 3), [2, 3], [1, 2], "VALID"),
    ((1, 4, 5, 4, 2), [2, 2, 3], [2, 1, 2], "SAME"),
]
HOWS = ["eager", "reference", "numba"]


def _run(fn, how, *args):
    run = fn if how == "eager" else tf.function(fn, backend=how)
    return run(*[tf.constant(a) for a in args]).numpy()


INPUTS = [rng.normal(size=shape).astype(np.float32) for shape, _, _, _ in CASES]


def _every_case(*xs):
    """Max and average pooling of every case: one function, so staging compiles once."""
    return [fn(x, k, s, p) for x, (_, k, s, p) in zip(xs, CASES)
            for fn in (tf.nn.max_pool, tf.nn.avg_pool)]


@pytest.mark.parametrize("how", HOWS)
def test_pooling_matches_the_direct_loop_definition(how):
    run = _every_case if how == "eager" else tf.function(_every_case, backend=how)
    got = iter(run(*[tf.constant(x) for x in INPUTS]))
    for x, (_, k, s, p) in zip(INPUTS, CASES):
        for kind in ("max", "avg"):
            np.testing.assert_allclose(next(got).numpy(), _reference(x, k, s, p, kind),
                                       rtol=1e-6, atol=1e-6, err_msg=f"{kind} {k} {s} {p}")


def test_named_variants_and_channels_first_agree_with_max_pool():
    x = rng.normal(size=(2, 6, 6, 3))
    want = tf.nn.max_pool(x, 3, 2, "SAME").numpy()
    np.testing.assert_array_equal(tf.nn.max_pool2d(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), want)
    first = tf.nn.max_pool2d(np.transpose(x, (0, 3, 1, 2)), 3, 2, "SAME", data_format="NCHW")
    np.testing.assert_array_equal(np.transpose(first.numpy(), (0, 2, 3, 1)), want)
    np.testing.assert_array_equal(tf.nn.pool(x, [3, 3], "MAX", [2, 2], "SAME"), want)
    np.testing.assert_array_equal(tf.nn.max_pool(x, np.int64(3), np.int32(2), "SAME"), want)
    x1 = rng.normal(size=(2, 9, 2))
    np.testing.assert_allclose(tf.nn.avg_pool1d(x1, 2, 2, "VALID"),
                               _reference(x1, [2], [2], "VALID", "avg"))
    x3 = rng.normal(size=(1, 4, 4, 4, 1))
    np.testing.assert_allclose(tf.nn.max_pool3d(x3, 2, 2, "VALID"),
                               _reference(x3, [2, 2, 2], [2, 2, 2], "VALID", "max"))


def test_explicit_padding_and_integer_max_pool():
    x = np.arange(2 * 5 * 5 * 1).reshape(2, 5, 5, 1).astype(np.int32)
    y = tf.nn.max_pool(x, 2, 2, [[0, 0], [1, 0], [0, 1], [0, 0]])
    assert y.dtype == tf.int32 and y.shape == (2, 3, 3, 1)
    assert y.numpy()[0, :, :, 0].tolist() == [[1, 3, 4], [11, 13, 14], [21, 23, 24]]


def test_max_pool_with_argmax_positions():
    x = rng.normal(size=(2, 4, 4, 3)).astype(np.float32)
    out, arg = tf.nn.max_pool_with_argmax(x, 2, 2, "VALID")
    _, arg_b = tf.nn.max_pool_with_argmax(x, 2, 2, "VALID", include_batch_in_index=True)
    assert arg.dtype == tf.int64
    flat = x.reshape(2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, arg.numpy().reshape(2, -1), 1),
                                  out.numpy().reshape(2, -1))
    np.testing.assert_array_equal(arg_b.numpy() - arg.numpy(),
                                  np.broadcast_to(np.arange(2).reshape(2, 1, 1, 1) * 48,
                                                  arg.shape))


def _numeric_gradient(fn, x, w, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (np.sum(fn(up) * w) - np.sum(fn(down) * w)) / (2 * eps)
    return g


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", [0, 2, 4])
def test_gradients_match_finite_differences(kind, case):
    shape, k, s, p = CASES[case]
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.01  # no ties
    fn = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
    y = fn(x, k, s, p).numpy()
    w = rng.normal(size=y.shape)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        total = tf.reduce_sum(fn(xt, k, s, p) * w)
    got = tape.gradient(total, xt).numpy()
    want = _numeric_gradient(lambda v: _reference(v, k, s, p, kind), x, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("how", HOWS)
def test_max_pool_gradient_goes_to_the_first_of_tied_maxima(how):
    # Every window of 2x2 (stride 1, so windows overlap) holds ties: TF routes each window's
    # gradient to its first maximum in row-major order.
    x = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]).reshape(1, 3, 3, 1)

    def grad(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.nn.max_pool2d(t, 2, 1, "VALID")
        return tape.gradient(y, t)

    got = _run(grad, how, x)[0, :, :, 0]
    # windows: (0,0)->(0,0); (0,1)->(0,1); (1,0)->(1,0); (1,1)->(1,1)
    np.testing.assert_array_equal(got, [[1, 1, 0], [1, 1, 0], [0, 0, 0]])


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_second_order_gradients(kind):
    # Pooling is piecewise linear (P at x): the Hessian of sum(pool(x)**2 * u) / 2 is
    # P^T diag(u) P, so the Hessian-vector product is the first-order gradient of
    # sum(pool(x) * (u * P v)), with P v a finite-difference directional derivative.
    shape, k, s, p = CASES[2]
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.01
    fn = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
    u = rng.uniform(0.5, 1.5, size=fn(x, k, s, p).shape)
    v = rng.normal(size=shape)
    xt = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            y = fn(xt, k, s, p)
            total = tf.reduce_sum(y * y * u) / 2
        gv = tf.reduce_sum(inner.gradient(total, xt) * v)
    hv = outer.gradient(gv, xt).numpy()
    eps = 1e-6
    pv = (fn(x + eps * v, k, s, p).numpy() - fn(x - eps * v, k, s, p).numpy()) / (2 * eps)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        back = tf.reduce_sum(fn(xt, k, s, p) * (u * pv))
    np.testing.assert_allclose(hv, tape.gradient(back, xt).numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("how", ["reference", "numba"])
def test_staged_gradients_with_an_unknown_batch(how):
    spec = tf.TensorSpec([None, 5, 6, 2], tf.float64)
    x = rng.normal(size=(3, 5, 6, 2))

    def grads(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.reduce_sum(tf.nn.avg_pool2d(t, 3, 2, "SAME")) + \
                tf.reduce_sum(tf.nn.max_pool2d(t, 2, 2, "SAME") ** 2)
        return tape.gradient(y, t)

    staged = tf.function(grads, input_signature=[spec], backend=how)
    np.testing.assert_allclose(staged(tf.constant(x)).numpy(), grads(tf.constant(x)).numpy(),
                               rtol=1e-12)


def test_errors_say_what_is_wrong():
    x = tf.zeros([1, 4, 4, 1])
    with pytest.raises(ValueError, match="^max_pool: padding must be 'SAME', 'VALID' or a list"):
        tf.nn.max_pool(x, 2, 2, "FULL")
    with pytest.raises(ValueError, match=r"^avg_pool2d: expects a rank-4 input \(NHWC\)"):
        tf.nn.avg_pool2d(tf.zeros([1, 4, 1]), 2, 2, "VALID")
    with pytest.raises(ValueError, match="^max_pool: ksize .* pools over the batch or channel"):
        tf.nn.max_pool(x, [1, 2, 2, 2], 1, "VALID")
    with pytest.raises(ValueError, match="^avg_pool: padding must be 'SAME' or 'VALID'"):
        tf.nn.avg_pool(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^max_pool: Computed output size would be negative"):
        tf.nn.max_pool(x, 5, 1, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="^avg_pool: 'input' has dtype int32"):
        tf.nn.avg_pool(tf.zeros([1, 4, 4, 1], tf.int32), 2, 2, "VALID")
    with pytest.raises(ValueError, match="^max_pool2d: data_format 'NCW' does not fit"):
        tf.nn.max_pool2d(x, 2, 2, "VALID", data_format="NCW")
