"""Seeded random ops: TensorFlow's global/op seed rules, reproducibility, distributions."""
import numpy as np
import pytest

import stagecraft as tf


def test_global_seed_makes_a_program_reproducible():
    tf.random.set_seed(7)
    a = [tf.random.uniform([3]).numpy(), tf.random.normal([2]).numpy()]
    tf.random.set_seed(7)
    b = [tf.random.uniform([3]).numpy(), tf.random.normal([2]).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_successive_calls_differ_and_op_seed_restarts_with_set_seed():
    tf.random.set_seed(3)
    first = tf.random.uniform([4], seed=1).numpy()
    second = tf.random.uniform([4], seed=1).numpy()
    assert not np.array_equal(first, second)
    tf.random.set_seed(3)
    np.testing.assert_array_equal(tf.random.uniform([4], seed=1).numpy(), first)


def test_op_seed_without_global_seed_is_reproducible_across_set_seed_none():
    tf.random.set_seed(None)
    a = tf.random.normal([3], seed=5).numpy()
    tf.random.set_seed(None)
    b = tf.random.normal([3], seed=5).numpy()
    np.testing.assert_array_equal(a, b)


def test_no_seeds_gives_fresh_values():
    tf.random.set_seed(None)
    assert not np.array_equal(tf.random.uniform([8]).numpy(), tf.random.uniform([8]).numpy())


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_normal_and_uniform_statistics(dtype):
    tf.random.set_seed(0)
    n = tf.random.normal([20000], mean=2.0, stddev=3.0, dtype=dtype)
    u = tf.random.uniform([20000], minval=-1.0, maxval=3.0, dtype=dtype)
    assert n.dtype == dtype and u.dtype == dtype
    assert abs(float(tf.reduce_mean(n)) - 2.0) < 0.1
    assert abs(np.std(n.numpy()) - 3.0) < 0.1
    assert -1.0 <= float(tf.reduce_min(u)) and float(tf.reduce_max(u)) < 3.0


def test_integer_uniform_needs_maxval_and_stays_in_range():
    with pytest.raises(ValueError, match="maxval must be given"):
        tf.random.uniform([3], dtype=tf.int32)
    x = tf.random.uniform([1000], minval=-2, maxval=5, dtype=tf.int64, seed=3)
    assert x.dtype == tf.int64
    assert set(np.unique(x.numpy())) <= set(range(-2, 5))


def test_dropout_scales_kept_values_and_zeroes_the_rest():
    tf.random.set_seed(1)
    x = tf.ones([10000])
    y = tf.nn.dropout(x, rate=0.25).numpy()
    kept = y[y != 0]
    np.testing.assert_allclose(kept, 1 / 0.75, rtol=1e-6)
    assert abs(kept.size / y.size - 0.75) < 0.03
    with pytest.raises(ValueError, match="rate must be in"):
        tf.nn.dropout(x, rate=1.0)
