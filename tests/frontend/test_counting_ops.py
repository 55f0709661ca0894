"""Counting, binning and partitioning ops against NumPy references (eagerly, staged on the
reference interpreter, and on Numba with --full-matrix: all cases in one function), their
gradients where TensorFlow has one, and their errors."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError

rng = np.random.default_rng(9)
V = rng.uniform(-1.0, 6.0, size=20)
L = np.array([0, 2, 1, 2, 0, 3])
P = np.array([0, 2, 2, 1, 0, 3])
S = rng.normal(size=(4, 5))
PERM = np.array([3, 4, 0, 2, 1])


def _stitch_ref(indices, data):
    n = max(max(i) for i in indices) + 1
    out = np.zeros(n)
    for i, d in zip(indices, data):
        out[list(i)] = d
    return out


# name: (stagecraft function of no arguments, NumPy reference value)
CASES = {
    "histogram": (lambda: tf.histogram_fixed_width(V, [0.0, 5.0], nbins=5),
                  np.histogram(np.clip(V, 0.0, 4.999), 5, (0.0, 5.0))[0]),
    "histogram_bins": (lambda: tf.histogram_fixed_width_bins(V, [0.0, 5.0], nbins=5),
                       np.clip(np.floor(V), 0, 4).astype(int)),
    "confusion": (lambda: tf.math.confusion_matrix(L, P),
                  np.histogram2d(L, P, bins=[range(5), range(5)])[0].astype(int)),
    "confusion_weighted": (lambda: tf.math.confusion_matrix(L, P, 5, weights=V[:6],
                                                            dtype=tf.float64),
                           np.histogram2d(L, P, bins=[range(6), range(6)], weights=V[:6])[0]),
    "in_top_k": (lambda: tf.math.in_top_k([0, 1, 2, 3], S, 2),
                 np.array([(S[r] > S[r, t]).sum() < 2 for r, t in enumerate([0, 1, 2, 3])])),
    "count_nonzero": (lambda: tf.math.count_nonzero(L.reshape(2, 3), axis=1),
                      np.count_nonzero(L.reshape(2, 3), axis=1)),
    "zero_fraction": (lambda: tf.math.zero_fraction(L.astype(float)),
                      np.float32(np.mean(L == 0))),
    "invert_permutation": (lambda: tf.math.invert_permutation(PERM), np.argsort(PERM)),
    "non_decreasing": (lambda: tf.math.is_non_decreasing(np.sort(L)), True),
    "strictly_increasing": (lambda: tf.math.is_strictly_increasing(np.sort(L)), False),
    "sequence_mask": (lambda: tf.sequence_mask(L[:3], 4),
                      np.arange(4)[None, :] < L[:3, None]),
    "unravel_index": (lambda: tf.unravel_index([1, 5, 7, 11], [3, 4]),
                      np.array(np.unravel_index([1, 5, 7, 11], (3, 4)))),
    "dynamic_partition": (lambda: tf.dynamic_partition(V[:6], L, 4)[2], V[:6][L == 2]),
    "dynamic_stitch": (lambda: tf.dynamic_stitch([[0, 3], [2, 3, 5]], [V[:2], V[2:5]]),
                       _stitch_ref([[0, 3], [2, 3, 5]], [V[:2], V[2:5]])),
}


def _all():
    return [fn() for fn, _ in CASES.values()]


@pytest.mark.parametrize("how", ["eager", "reference",
                                 pytest.param("numba", marks=pytest.mark.full_matrix)])
def test_values_match_numpy(how):
    run = _all if how == "eager" else tf.function(_all, backend=how)
    for (name, (_, want)), got in zip(CASES.items(), run()):
        np.testing.assert_allclose(got.numpy(), np.asarray(want, got.numpy().dtype), rtol=1e-12,
                                   err_msg=name)


def test_partition_and_stitch_gradients():
    x = tf.Variable(V[:6])
    with tf.GradientTape() as tape:
        parts = tf.dynamic_partition(x, L, 4)
        y = tf.reduce_sum(parts[2] * 3.0) + tf.reduce_sum(
            tf.dynamic_stitch([[1, 0], [0]], [x[:2], x[2:3]]) * [5.0, 7.0])
    want = np.where(L == 2, 3.0, 0.0)
    want[2] += 5.0      # x[2] wins row 0 (the later index), x[0] is overwritten
    want[0] += 7.0      # x[0] goes to row 1
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want)


def test_bad_inputs_raise():
    with pytest.raises(InvalidArgumentError, match="not a permutation"):
        tf.math.invert_permutation([0, 0, 1])
    with pytest.raises(InvalidArgumentError, match="partitions must be in"):
        tf.dynamic_partition([1.0, 2.0], [0, 2], 2)
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        tf.unravel_index([9], [3, 3])
    with pytest.raises(InvalidArgumentError, match="less than num_classes"):
        tf.math.confusion_matrix([0, 3], [0, 1], num_classes=3)
