"""Special functions (lgamma, digamma, erf, erfc, erfinv, zeta, polygamma) against SciPy and
cumulative_logsumexp against NumPy's logaddexp.accumulate:
eagerly, staged on the reference interpreter and on Numba; the scalar implementations that
compiled code uses (``backends/codegen/special.py``) over wide ranges; gradients to second
order against finite differences; TensorFlow's values at the poles and domain edges."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import stagecraft as tf
from stagecraft.backends.codegen import special

X = np.array([0.3, 0.9, 1.7, 2.5, 6.0, 13.5])
NEG = np.array([-2.5, -0.7, -3.2])
P = np.array([-0.9, -0.3, 0.0, 0.4, 0.95])

# name: (stagecraft function, SciPy reference, arguments)
CASES = {
    "lgamma": (tf.math.lgamma, sp.gammaln, (np.concatenate([X, NEG]),)),
    "digamma": (tf.math.digamma, sp.psi, (np.concatenate([X, NEG]),)),
    "erf": (tf.math.erf, sp.erf, (np.concatenate([P, X, -X]),)),
    "erfc": (tf.math.erfc, sp.erfc, (np.concatenate([P, X, -X]),)),
    "erfinv": (tf.math.erfinv, sp.erfinv, (P,)),
    "zeta": (tf.math.zeta, sp.zeta, (X + 1.1, X[::-1])),
    "polygamma": (tf.math.polygamma, sp.polygamma, (np.array([0.0, 1.0, 2.0, 3.0, 1.0, 0.0]),
                                                    X)),
}


def _all(*args):
    out, k = [], 0
    for fn, _, a in CASES.values():
        out.append(fn(*args[k:k + len(a)]))
        k += len(a)
    return out


@pytest.mark.parametrize("how", ["eager", "reference", "numba"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_scipy(how, dtype):
    args = [tf.constant(np.asarray(a, dtype)) for _, _, c in CASES.values() for a in c]
    run = _all if how == "eager" else tf.function(_all, backend=how)
    rtol = 1e-13 if dtype == np.float64 else 2e-6
    for (name, (_, ref, a)), got in zip(CASES.items(), run(*args)):
        assert got.dtype == tf.as_dtype(dtype), name
        want = ref(*[np.asarray(v, dtype).astype(np.float64) for v in a])
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=np.finfo(dtype).tiny,
                                   err_msg=name)


def test_scalar_implementations_match_scipy():
    x = np.concatenate([np.linspace(-6.3, 40.0, 501), [1e-8, 1e3, 1e6]])
    x = x[np.abs(x - np.round(x)) > 1e-6]
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 401), [1 - 1e-12, -1 + 1e-15, 1e-20]])
    s, q = np.meshgrid(np.linspace(1.05, 9.0, 23), np.linspace(0.05, 12.0, 23))
    for fn, ref, args in [(special.digamma, sp.psi, (x,)), (special.lgamma, sp.gammaln, (x,)),
                          (special.erfinv, sp.erfinv, (y,)), (special.zeta, sp.zeta, (s, q)),
                          (special.erfc, sp.erfc, (x,))]:
        got = np.vectorize(fn)(*args)
        np.testing.assert_allclose(got, ref(*args), rtol=2e-14, atol=1e-15, err_msg=fn.__name__)


def test_poles_and_domain_edges_follow_tensorflow():
    d = tf.float64
    assert np.isnan(tf.math.digamma(tf.constant([0.0, -2.0], d)).numpy()).all()
    assert tf.math.lgamma(tf.constant([0.0, -3.0], d)).numpy().tolist() == [math.inf] * 2
    assert tf.math.erfinv(tf.constant([1.0, -1.0], d)).numpy().tolist() == [math.inf, -math.inf]
    assert np.isnan(tf.math.erfinv(tf.constant([1.5], d)).numpy()).all()
    assert tf.math.zeta(tf.constant(1.0, d), tf.constant(2.0, d)).numpy() == math.inf
    assert np.isnan(tf.math.polygamma(tf.constant([0.5, -1.0], d), tf.constant(2.0, d))
                    .numpy()).all()
    for name, fn in [("digamma", special.digamma), ("lgamma", special.lgamma),
                     ("erfinv", special.erfinv)]:
        got = tf.function(getattr(tf.math, name), backend="numba")(
            tf.constant([0.0, -2.0, 1.0, 1.5], d)).numpy()
        want = [fn(v) for v in (0.0, -2.0, 1.0, 1.5)]
        np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=name)


def _numeric_grad(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for sign in (1, -1):
            moved = x.copy()
            moved[i] += sign * eps
            out[i] += sign * f(moved)
    return out / (2 * eps)


GRAD_CASES = {
    "lgamma": (tf.math.lgamma, np.array([0.4, 1.3, 4.2, -1.5])),
    "digamma": (tf.math.digamma, np.array([0.4, 1.3, 4.2, -1.5])),
    "erf": (tf.math.erf, np.array([-1.2, 0.1, 0.8])),
    "erfc": (tf.math.erfc, np.array([-1.2, 0.1, 0.8])),
    "erfinv": (tf.math.erfinv, np.array([-0.7, 0.1, 0.8])),
    "zeta_q": (lambda q: tf.math.zeta(tf.constant([2.5, 3.0, 4.5], tf.float64), q),
               np.array([0.6, 1.5, 3.0])),
    "polygamma": (lambda x: tf.math.polygamma(tf.constant([0.0, 1.0, 2.0], tf.float64), x),
                  np.array([0.6, 1.5, 3.0])),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_to_second_order(name):
    fn, x0 = GRAD_CASES[name]
    w = np.linspace(0.5, 1.5, x0.size)

    def value(x):
        return float(tf.reduce_sum(fn(tf.constant(x)) * w))

    def first(x):
        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(fn(v) * w)
        return tape.gradient(y, v).numpy()

    np.testing.assert_allclose(first(x0), _numeric_grad(value, x0), rtol=1e-6, atol=1e-8)
    v = tf.Variable(x0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(fn(v) * w)
        g = inner.gradient(y, v)
        gw = tf.reduce_sum(g * w)
    second = outer.gradient(gw, v).numpy()
    np.testing.assert_allclose(second, _numeric_grad(lambda x: float(np.sum(first(x) * w)), x0),
                               rtol=1e-5, atol=1e-7)


def test_zeta_has_no_gradient_in_x_as_in_tensorflow():
    x = tf.Variable([2.5])
    with tf.GradientTape() as tape:
        y = tf.math.zeta(x, 1.5)
    assert tape.gradient(y, x) is None


def _cumulative_logsumexp_ref(x, axis, exclusive, reverse):
    x = np.flip(x, axis) if reverse else x
    out = np.logaddexp.accumulate(x, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), -np.inf),
                              np.take(out, range(out.shape[axis] - 1), axis)], axis)
    return np.flip(out, axis) if reverse else out


LSE_X = np.array([[-1000.0, 0.5, 3.0, -2.0], [700.0, 710.0, -5.0, 1.0]])
LSE_CASES = [(1, False, False), (1, True, True), (0, True, False), (-1, False, True)]


@pytest.mark.parametrize("how", ["eager", "reference", "numba"])
def test_cumulative_logsumexp_matches_numpy_without_overflow(how):
    def f(x):
        return [tf.math.cumulative_logsumexp(x, a, e, r) for a, e, r in LSE_CASES]

    run = f if how == "eager" else tf.function(f, backend=how)
    for (a, e, r), got in zip(LSE_CASES, run(tf.constant(LSE_X))):
        np.testing.assert_allclose(got.numpy(), _cumulative_logsumexp_ref(LSE_X, a, e, r),
                                   rtol=1e-15)
    assert tf.math.cumulative_logsumexp(tf.constant(LSE_X, tf.float32), 1).numpy()[0, 0] == \
        -1000.0


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_logsumexp_gradients_to_second_order(exclusive, reverse):
    rng = np.random.default_rng(3)
    x0, w, w2 = (rng.normal(size=(2, 5)) for _ in range(3))

    def objective(x):
        out = tf.math.cumulative_logsumexp(x, axis=1, exclusive=exclusive, reverse=reverse)
        return tf.reduce_sum(tf.where(tf.math.is_finite(out), out, 0.0) * w)

    def first(x):
        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = objective(v)
        return tape.gradient(y, v).numpy()

    np.testing.assert_allclose(first(x0), _numeric_grad(lambda x: float(objective(
        tf.constant(x))), x0), rtol=1e-6, atol=1e-8)
    v = tf.Variable(x0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = objective(v)
        gw = tf.reduce_sum(inner.gradient(y, v) * w2)
    np.testing.assert_allclose(outer.gradient(gw, v).numpy(), _numeric_grad(
        lambda x: float(np.sum(first(x) * w2)), x0), rtol=1e-5, atol=1e-7)


def test_zero_safe_functions_match_numpy_and_have_finite_gradients():
    x = np.array([0.0, 0.0, 1.5, -2.0])
    y = np.array([0.0, -1.0, 2.0, 0.5])
    with np.errstate(all="ignore"):
        want = [np.where(x == 0, 0.0, x / y), np.where(x == 0, 0.0, x * np.log1p(y)),
                np.where(y == 0, 0.0, 1 / y), -np.logaddexp(0.0, -x)]
    xv, yv = tf.Variable(x), tf.Variable(y)
    with tf.GradientTape(persistent=True) as tape:
        got = [tf.math.xdivy(xv, yv), tf.math.xlog1py(xv, yv), tf.math.reciprocal_no_nan(yv),
               tf.math.log_sigmoid(xv)]
        total = tf.add_n([tf.reduce_sum(g) for g in got])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-15)
    gx, gy = tape.gradient(total, [xv, yv])
    with np.errstate(all="ignore"):
        want_gx = np.where(x == 0, 0.0, 1 / y + np.log1p(y)) + 1 / (1 + np.exp(x))
        want_gy = np.where(x == 0, 0.0, -x / y ** 2 + x / (1 + y)) + np.where(y == 0, 0.0,
                                                                             -1 / y ** 2)
    np.testing.assert_allclose(gx.numpy(), want_gx, rtol=1e-14)
    np.testing.assert_allclose(gy.numpy(), want_gy, rtol=1e-14)
