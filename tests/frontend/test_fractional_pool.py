"""tf.nn.fractional_max_pool / fractional_avg_pool: outputs equal a loop over the regions the
returned sequences describe (random and pseudo-random sequences, overlapping or not), the
sequences are valid (0 to the size, steps floor/ceil of the ratio), seeds follow TF's rules,
gradients equal finite differences with the sequences held fixed, staged works, errors."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

from support.gradients import central_differences

X = np.random.default_rng(5).normal(size=(2, 7, 9, 3))
RATIO = [1.0, 1.6, 1.3, 1.0]


def _reference(x, rows, cols, overlapping, mean):
    out = np.zeros((x.shape[0], len(rows) - 1, len(cols) - 1, x.shape[3]))
    for i in range(len(rows) - 1):
        for j in range(len(cols) - 1):
            r1 = min(rows[i + 1] + overlapping, x.shape[1])
            c1 = min(cols[j + 1] + overlapping, x.shape[2])
            region = x[:, rows[i]:r1, cols[j]:c1]
            out[:, i, j] = region.mean((1, 2)) if mean else region.max((1, 2))
    return out


@pytest.mark.parametrize("overlapping", [False, True])
@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("mean", [False, True], ids=["max", "avg"])
def test_output_is_the_pooling_of_the_returned_regions(mean, pseudo_random, overlapping):
    fn = tf.nn.fractional_avg_pool if mean else tf.nn.fractional_max_pool
    y, rows, cols = fn(X, RATIO, pseudo_random=pseudo_random, overlapping=overlapping, seed=3)
    assert y.shape == [2, 4, 6, 3] and rows.dtype == tf.int64
    r, c = rows.numpy(), cols.numpy()
    for seq, size, n in ((r, 7, 4), (c, 9, 6)):
        assert seq[0] == 0 and seq[-1] == size and len(seq) == n + 1
        assert set(np.diff(seq)) <= {size // n, size // n + 1}
    np.testing.assert_allclose(y.numpy(), _reference(X, r, c, overlapping, mean), rtol=1e-12)


def test_seeds_follow_tensorflow():
    tf.random.set_seed(2)
    a = [tf.nn.fractional_max_pool(X, RATIO, seed=4)[1].numpy().tolist() for _ in range(6)]
    tf.random.set_seed(2)
    b = [tf.nn.fractional_max_pool(X, RATIO, seed=4)[1].numpy().tolist() for _ in range(6)]
    assert a == b and len({tuple(s) for s in a}) > 1   # repeatable, yet drawn anew per call


@pytest.mark.parametrize("fn", [tf.nn.fractional_max_pool, tf.nn.fractional_avg_pool])
def test_gradients_equal_finite_differences(fn):
    w = np.random.default_rng(1).normal(size=(2, 4, 6, 3))

    def loss(x):
        tf.random.set_seed(7)   # the same regions on every call
        return tf.reduce_sum(fn(x, RATIO, overlapping=True, seed=1)[0] * w)

    xt = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        value = loss(xt)
    got = tape.gradient(value, xt).numpy()
    np.testing.assert_allclose(got, central_differences(lambda v: float(loss(tf.constant(v))), X),
                               atol=1e-6)


def test_staged_draws_regions_on_each_call():
    f = tf.function(lambda x: tf.nn.fractional_max_pool(x, RATIO, pseudo_random=True, seed=2))
    outs = [f(X) for _ in range(5)]
    for y, r, c in outs:
        np.testing.assert_allclose(y.numpy(), _reference(X, r.numpy(), c.numpy(), False, False))
    assert len({tuple(r.numpy()) + tuple(c.numpy()) for _, r, c in outs}) > 1


def test_errors():
    with pytest.raises(ValueError, match=r"pooling_ratio must be >= 1 .* \(\[1.0, rows, cols"):
        tf.nn.fractional_max_pool(X, [2.0, 1.5, 1.5, 1.0])
    with pytest.raises(ValueError, match="value must be 4-D"):
        tf.nn.fractional_avg_pool(X[0], RATIO)
