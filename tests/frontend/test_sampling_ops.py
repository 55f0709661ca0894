"""tf.random.categorical / stateless_categorical / shuffle / gamma / stateless_gamma /
poisson / stateless_poisson and tf.vectorized_map: sample frequencies and moments against the
distributions with fixed seeds, TensorFlow's seed rules (an op seed under set_seed repeats;
stateless ops are pure functions of the seed, eagerly and staged), dtypes and shapes, and
errors."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir import OPS

P = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])


def test_categorical_frequencies_match_the_probabilities():
    tf.random.set_seed(7)
    s = tf.random.categorical(tf.math.log(tf.constant(P)), 20000, seed=3)
    assert s.dtype == tf.int64 and s.shape == [2, 20000]
    for row, p in zip(s.numpy(), P):
        freq = np.bincount(row, minlength=3) / row.size
        # 5 standard errors of a frequency from 20000 draws
        assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / row.size)), (freq, p)


def test_categorical_seeds_follow_tensorflow():
    logits = tf.zeros([1, 10])
    tf.random.set_seed(1)
    a1, a2 = (tf.random.categorical(logits, 8, seed=5) for _ in range(2))
    tf.random.set_seed(1)
    b1 = tf.random.categorical(logits, 8, seed=5, dtype=tf.int32)
    assert b1.dtype == tf.int32
    assert a1.numpy().tolist() == b1.numpy().tolist()
    assert a1.numpy().tolist() != a2.numpy().tolist()   # each call draws anew


def test_impossible_classes_are_never_drawn():
    s = tf.random.categorical([[0.0, -np.inf, 0.0]], 500, seed=2)
    assert 1 not in s.numpy()


def test_stateless_categorical_is_a_function_of_the_seed_eager_and_staged():
    logits = tf.math.log(tf.constant(P))
    eager = tf.random.stateless_categorical(logits, 50, seed=[3, 4])
    staged = tf.function(lambda l, s: tf.random.stateless_categorical(l, 50, s),
                         backend="numba")(logits, tf.constant([3, 4]))
    assert eager.numpy().tolist() == staged.numpy().tolist()
    other = tf.random.stateless_categorical(logits, 50, seed=[3, 5])
    assert eager.numpy().tolist() != other.numpy().tolist()


def test_shuffle_permutes_rows_and_repeats_under_a_seed():
    x = tf.reshape(tf.range(20), [10, 2])
    tf.random.set_seed(4)
    a = tf.random.shuffle(x, seed=9)
    tf.random.set_seed(4)
    b = tf.random.shuffle(x, seed=9)
    assert a.numpy().tolist() == b.numpy().tolist()
    assert sorted(map(tuple, a.numpy().tolist())) == sorted(map(tuple, x.numpy().tolist()))
    assert a.numpy().tolist() != x.numpy().tolist()
    # every position is equally likely: the first row's position over many shuffles
    f = tf.function(lambda v: tf.random.shuffle(v, seed=1))
    firsts = [int(np.argmax(f(tf.range(4)).numpy() == 0)) for _ in range(400)]
    counts = np.bincount(firsts, minlength=4)
    assert np.all(np.abs(counts - 100) < 5 * np.sqrt(400 * 0.25 * 0.75)), counts


def test_gamma_moments_match_the_distribution():
    alpha = np.array([0.3, 1.0, 2.5, 9.0])
    beta = np.array([2.0, 1.0, 0.5, 3.0])
    x = tf.random.gamma([20000], alpha, beta, dtype=tf.float64, seed=4).numpy()
    assert x.shape == (20000, 4) and (x > 0).all()
    mean, var = alpha / beta, alpha / beta ** 2
    se_mean = np.sqrt(var / x.shape[0])
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se_mean), (x.mean(0), mean)
    # the variance's standard error from the fourth central moment 6 alpha / beta^4 + 3 var^2
    se_var = np.sqrt((6 * alpha / beta ** 4 + 2 * var ** 2) / x.shape[0])
    assert np.all(np.abs(x.var(0) - var) < 5 * se_var), (x.var(0), var)


def test_gamma_is_deterministic_and_staged_equals_eager():
    alpha = tf.constant([[0.5], [4.0]], tf.float32)
    eager = tf.random.stateless_gamma([3], seed=[7, 8], alpha=alpha)
    assert eager.shape == [3, 2, 1] and eager.dtype == tf.float32
    for backend in ("reference", "numba"):
        staged = tf.function(lambda a, s: tf.random.stateless_gamma([3], s, a),
                             backend=backend)(alpha, tf.constant([7, 8]))
        np.testing.assert_array_equal(staged.numpy(), eager.numpy())
    tf.random.set_seed(2)
    a = tf.random.gamma([5], 2.0, seed=1)
    tf.random.set_seed(2)
    assert a.numpy().tolist() == tf.random.gamma([5], 2.0, seed=1).numpy().tolist()
    assert np.isnan(tf.random.gamma([2], [0.0, -1.0], seed=1).numpy()).all()


def test_gamma_gradients_flow_to_beta_and_alpha():
    beta = tf.Variable([2.0, 4.0], dtype=tf.float64)
    alpha = tf.Variable([1.5, 3.0], dtype=tf.float64)
    with tf.GradientTape() as tape:
        x = tf.random.stateless_gamma([], [1, 1], alpha, beta, dtype=tf.float64)
        y = tf.reduce_sum(x)
    g_beta, g_alpha = tape.gradient(y, [beta, alpha])
    np.testing.assert_allclose(g_beta.numpy(), -x.numpy() / beta.numpy(), rtol=1e-12)
    # the sample in alpha: its Gamma(alpha, 1) part's implicit derivative, over beta
    want = OPS["random_gamma_grad"].kernel(alpha.numpy(), x.numpy() * beta.numpy())
    np.testing.assert_allclose(g_alpha.numpy(), want / beta.numpy(), rtol=1e-12)


def test_poisson_moments_and_dtypes():
    lam = np.array([0.0, 0.6, 4.0, 9.99, 10.0, 37.0, 800.0])
    x = tf.random.poisson([20000], lam, dtype=tf.float64, seed=6).numpy()
    assert x.shape == (20000, 7) and (x == np.round(x)).all() and (x >= 0).all()
    se = np.sqrt(np.maximum(lam, 1e-12) / x.shape[0])
    assert np.all(np.abs(x.mean(0) - lam) < 5 * se + 1e-12), (x.mean(0), lam)
    # Poisson: variance = mean; its standard error from the fourth central moment
    se_var = np.sqrt((lam + 2 * lam ** 2) / x.shape[0])
    assert np.all(np.abs(x.var(0) - lam) < 5 * se_var + 1e-12), (x.var(0), lam)
    assert tf.random.stateless_poisson([2], [1, 2], 3.0).dtype == tf.int32
    assert tf.random.poisson([2], 3.0, dtype=tf.int64, seed=1).dtype == tf.int64
    assert np.isnan(tf.random.poisson([2], -1.0, seed=1).numpy()).all()


def test_poisson_staged_equals_eager():
    lam = tf.constant([0.3, 7.0, 25.0, 400.0])
    eager = tf.random.stateless_poisson([3], [5, 6], lam, dtype=tf.float32)
    staged = tf.function(lambda l, s: tf.random.stateless_poisson([3], s, l, dtype=tf.float32),
                         backend="numba")(lam, tf.constant([5, 6]))
    np.testing.assert_array_equal(staged.numpy(), eager.numpy())


def test_vectorized_map_equals_a_loop():
    x = tf.constant(np.arange(12.0).reshape(4, 3))

    def fn(row):
        return tf.reduce_sum(row * row), row[::-1]

    sums, flipped = tf.vectorized_map(fn, x)
    assert sums.numpy().tolist() == (x.numpy() ** 2).sum(1).tolist()
    assert flipped.numpy().tolist() == x.numpy()[:, ::-1].tolist()
    staged = tf.function(lambda v: tf.vectorized_map(lambda r: r * 2.0, v,
                                                     fallback_to_while_loop=False))
    assert staged(x).numpy().tolist() == (x.numpy() * 2).tolist()


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="logits should be a matrix"):
        tf.random.categorical([0.0, 1.0], 3)
    with pytest.raises(TypeError, match="dtype must be int32 or int64"):
        tf.random.categorical([[0.0, 1.0]], 3, dtype=tf.float32)
    with pytest.raises(ValueError, match="seed must be an integer tensor of shape \\[2\\]"):
        tf.random.stateless_categorical([[0.0, 1.0]], 3, seed=[1, 2, 3])
    with pytest.raises(ValueError, match="at least one dimension"):
        tf.random.shuffle(tf.constant(1.0))
    with pytest.raises(TypeError, match="gamma: dtype must be float32 or float64"):
        tf.random.gamma([2], 1.0, dtype=tf.int32)
