"""The gradient of tf.random.gamma in alpha (TensorFlow's implicit reparameterization): the
per-sample derivative ``random_gamma_grad`` against finite differences of the inverse CDF at a
fixed quantile (SciPy's gammaincinv), into the far tails; the compiled scalar against the
reference kernel; tape gradients of sample means against finite differences of the means of
samples drawn with fixed seeds, and against the closed forms; shapes, beta, staged == eager."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special as sp

import stagecraft as tf
from stagecraft.backends.codegen import special
from stagecraft.ir import OPS

ALPHAS = np.array([0.01, 0.3, 1.0, 2.5, 10.0, 100.0, 1000.0])[:, None]
QUANTILES = np.array([1e-6, 0.01, 0.5, 0.99, 1 - 1e-7])[None, :]


def test_per_sample_derivative_is_that_of_the_inverse_cdf():
    x = sp.gammaincinv(ALPHAS, QUANTILES)
    h = 1e-5 * ALPHAS
    want = (sp.gammaincinv(ALPHAS + h, QUANTILES) - sp.gammaincinv(ALPHAS - h, QUANTILES)) / (2 * h)
    got = OPS["random_gamma_grad"].kernel(ALPHAS, x)
    ok = x > 0   # alpha 0.01 at quantile 1e-6 underflows to a sample of 0 (derivative 0)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5)
    assert (got[~ok] == 0).all()
    compiled = np.vectorize(special.random_gamma_grad)(ALPHAS, x)
    np.testing.assert_allclose(compiled, got, rtol=1e-8, atol=0)


def test_invalid_parameters_give_nan():
    got = OPS["random_gamma_grad"].kernel(np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, -1.0]))
    assert np.isnan(got).all()


def _mean_of(alpha, fn, beta=None):
    return tf.reduce_mean(fn(tf.random.stateless_gamma([20000], seed=[4, 5], alpha=alpha,
                                                       beta=beta, dtype=tf.float64)), axis=0)


@pytest.mark.parametrize("fn, closed_form", [
    (lambda x: x, lambda a: np.ones_like(a)),
    (tf.math.log, lambda a: sp.polygamma(1, a)),
    (tf.square, lambda a: 2 * a + 1),
])
def test_tape_gradient_equals_finite_differences_of_seeded_samples(fn, closed_form):
    alpha = tf.constant([0.4, 2.0, 15.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(alpha)
        m = _mean_of(alpha, fn)
    grad = tape.gradient(m, alpha).numpy()
    d = 1e-4
    fd = (_mean_of(alpha + d, fn) - _mean_of(alpha - d, fn)).numpy() / (2 * d)
    np.testing.assert_allclose(grad, fd, rtol=0.03)
    np.testing.assert_allclose(grad, closed_form(alpha.numpy()), rtol=0.05)


def test_rate_beta_and_sample_shape():
    alpha = tf.constant([[1.5], [6.0]], tf.float64)
    beta = tf.constant([2.0, 0.5], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([alpha, beta])
        x = tf.random.gamma([3000], alpha, beta, seed=7, dtype=tf.float64)
        assert x.shape == [3000, 2, 2]
        m = tf.reduce_mean(x, axis=0)
    ga, gb = tape.gradient(m, [alpha, beta])
    assert ga.shape == [2, 1] and gb.shape == [2]
    # E[x] = alpha / beta: d/d alpha sums 1/beta over the two rates
    np.testing.assert_allclose(ga.numpy()[:, 0], [1 / 2 + 1 / 0.5] * 2, rtol=0.05)


def test_staged_gradient_equals_eager():
    def grad(alpha):
        with tf.GradientTape() as tape:
            tape.watch(alpha)
            x = tf.random.stateless_gamma([64, 2], seed=[1, 2], alpha=alpha)
            loss = tf.reduce_sum(tf.sqrt(x))
        return tape.gradient(loss, alpha)

    alpha = tf.constant([0.7, 3.0])
    eager = grad(alpha).numpy()
    for backend in ("reference", "numba"):
        staged = tf.function(grad, backend=backend)(alpha).numpy()
        np.testing.assert_allclose(staged, eager, rtol=1e-5)


def test_second_derivative_in_alpha_raises_instead_of_dropping_a_term():
    alpha = tf.constant([0.7, 3.0])
    with tf.GradientTape() as outer:
        outer.watch(alpha)
        with tf.GradientTape() as inner:
            inner.watch(alpha)
            loss = tf.reduce_sum(tf.random.stateless_gamma([4, 2], seed=[1, 2], alpha=alpha))
        g = inner.gradient(loss, alpha)
    with pytest.raises(tf.errors.UnimplementedError) as info:
        outer.gradient(g, alpha)
    assert str(info.value).splitlines()[0].startswith(
        "random_gamma_grad: the second derivative of tf.random.gamma's samples")
