"""tf.linalg.diag / diag_part / set_diag with k (one diagonal or a band), num_rows, num_cols,
padding_value and align: TensorFlow's documented examples, a NumPy reference over every
alignment and band, round trips, gradients against finite differences, unknown batch
dimensions when staged, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

from support.gradients import central_differences

ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]
BANDS = [0, 1, -2, (-1, 2), (-3, 4), (2, 3)]


def _length(rows, cols, d):
    return max(0, min(rows + min(0, d), cols - max(0, d)))


def _diag_part(x, low, high, pad, align):
    """The band of x as TensorFlow lays it out, from np.diagonal."""
    rows, cols = x.shape[-2:]
    width = max(_length(rows, cols, d) for d in range(low, high + 1))
    out = np.full(x.shape[:-2] + (high - low + 1, width), pad, x.dtype)
    first, second = align.split("_")
    for r, d in enumerate(range(high, low - 1, -1)):
        v = np.diagonal(x, offset=d, axis1=-2, axis2=-1)
        off = width - v.shape[-1] if (first if d >= 0 else second) == "RIGHT" else 0
        out[..., r, off:off + v.shape[-1]] = v
    return out if low != high else out[..., 0, :]


def test_tensorflow_documented_examples():
    diagonals = np.array([[[0, 8, 9], [1, 2, 3], [4, 5, 0]],
                          [[0, 2, 3], [6, 7, 9], [9, 1, 0]]])
    want = [[[1, 8, 0], [4, 2, 9], [0, 5, 3]], [[6, 2, 0], [9, 7, 3], [0, 1, 9]]]
    assert tf.linalg.diag(diagonals, k=(-1, 1)).numpy().tolist() == want
    left_right = np.array([[[8, 9, 0], [1, 2, 3], [0, 4, 5]],
                           [[2, 3, 0], [6, 7, 9], [0, 9, 1]]])
    assert tf.linalg.diag(left_right, k=(-1, 1), align="LEFT_RIGHT").numpy().tolist() == want
    assert tf.linalg.diag([1, 2], k=-1, num_rows=3, num_cols=4).numpy().tolist() == \
        [[0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0]]
    assert tf.linalg.diag([1, 2], k=-1, padding_value=9).numpy().tolist() == \
        [[9, 9, 9], [1, 9, 9], [9, 2, 9]]
    x = np.array([[[1, 2, 3, 4], [5, 6, 7, 8], [9, 8, 7, 6]]])
    assert tf.linalg.diag_part(x, k=(-1, 2)).numpy().tolist() == \
        [[[0, 3, 8], [2, 7, 6], [1, 6, 7], [5, 8, 0]]]
    assert tf.linalg.diag_part(x, k=(-1, 2), align="LEFT_RIGHT").numpy().tolist() == \
        [[[3, 8, 0], [2, 7, 6], [1, 6, 7], [0, 5, 8]]]
    assert tf.linalg.diag_part(x, k=(1, 3), padding_value=9).numpy().tolist() == \
        [[[9, 9, 4], [9, 3, 8], [2, 7, 6]]]


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("k", BANDS)
def test_against_numpy_and_round_trips(k, align):
    x = np.random.default_rng(0).integers(1, 100, (2, 4, 5)).astype(np.float32)
    low, high = (k, k) if isinstance(k, int) else k
    part = tf.linalg.diag_part(x, k=k, padding_value=-1, align=align).numpy()
    np.testing.assert_array_equal(part, _diag_part(x, low, high, -1, align))
    i, j = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    band = (j - i >= low) & (j - i <= high)
    again = tf.linalg.diag(part, k=k, num_rows=4, num_cols=5, align=align).numpy()
    np.testing.assert_array_equal(again, np.where(band, x, 0))
    put = tf.linalg.set_diag(np.full_like(x, -5), part, k=k, align=align).numpy()
    np.testing.assert_array_equal(put, np.where(band, x, -5))


@pytest.mark.parametrize("fn", [
    lambda x, d: tf.linalg.diag(d, k=(-1, 1), num_rows=3, num_cols=4, padding_value=0.5),
    lambda x, d: tf.linalg.diag_part(x, k=(-1, 2), padding_value=2.0, align="LEFT_RIGHT"),
    lambda x, d: tf.linalg.set_diag(x, d, k=(-1, 1)),
    lambda x, d: tf.linalg.diag(d[0], k=1),
], ids=["diag", "diag_part", "set_diag", "diag_k1"])
def test_gradients_equal_finite_differences(fn):
    rng = np.random.default_rng(1)
    x, d = rng.normal(size=(3, 4)), rng.normal(size=(3, 3))
    w = rng.normal(size=np.shape(fn(x, d)))

    def loss(a, b):
        return float(tf.reduce_sum(fn(a, b) * w))

    xt, dt = tf.constant(x), tf.constant(d)
    with tf.GradientTape() as tape:
        tape.watch([xt, dt])
        out = tf.reduce_sum(fn(xt, dt) * w)
    gx, gd = tape.gradient(out, [xt, dt])
    for got, want in [(gx, central_differences(lambda v: loss(v, d), x)),
                      (gd, central_differences(lambda v: loss(x, v), d))]:
        if got is None:
            assert np.allclose(want, 0)
        else:
            np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_staged_with_unknown_batch_dimensions():
    spec = [tf.TensorSpec([None, 3, 3], tf.float32), tf.TensorSpec([None, 2, 3], tf.float32)]

    @tf.function(input_signature=spec)
    def f(x, d):
        return (tf.linalg.set_diag(x, d, k=(0, 1)), tf.linalg.diag_part(x, k=(-1, 0)),
                tf.linalg.diag(d, k=(0, 1)))

    x = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    d = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    for got, want in zip(f(x, d), (tf.linalg.set_diag(x, d, k=(0, 1)),
                                   tf.linalg.diag_part(x, k=(-1, 0)),
                                   tf.linalg.diag(d, k=(0, 1)))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_errors_say_what_to_fix():
    with pytest.raises(ValueError, match=r"tf.linalg.diag: a band k=\(-1, 1\) takes 3"):
        tf.linalg.diag(np.ones((2, 3)), k=(-1, 1))
    with pytest.raises(ValueError, match="do not fit a 2x2 matrix"):
        tf.linalg.diag([1, 2, 3], num_rows=2, num_cols=2)
    with pytest.raises(ValueError, match="lower diagonal k.0.=2 must not lie above"):
        tf.linalg.diag_part(np.ones((3, 3)), k=(2, 1))
    with pytest.raises(ValueError, match="reaches outside a 3x3 matrix"):
        tf.linalg.diag_part(np.ones((3, 3)), k=3)
    with pytest.raises(ValueError, match="align must be one of"):
        tf.linalg.diag_part(np.ones((3, 3)), align="CENTER")
    with pytest.raises(ValueError, match=r"diagonal must end in dimensions \[3\]"):
        tf.linalg.set_diag(np.ones((3, 3)), [1.0, 2.0])
