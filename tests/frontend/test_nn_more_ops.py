"""The rest of tf.nn's everyday names: values against NumPy references written from
TensorFlow's documented formulas and examples (space/depth/batch rearrangements, the losses,
the moment helpers, collapse_repeated, dilation2d / erosion2d), gradients against finite
differences, staged == eager, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

from support.gradients import central_differences

RNG = np.random.default_rng(3)


def test_depth_to_space_and_back_as_documented():
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]])
    y = tf.nn.depth_to_space(x, 2).numpy()
    assert y[..., 0].tolist() == [[[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14],
                                   [11, 12, 15, 16]]]
    assert (tf.nn.space_to_depth(y, 2).numpy() == x).all()
    z = RNG.normal(size=(2, 4, 6, 3))
    np.testing.assert_array_equal(tf.nn.depth_to_space(tf.nn.space_to_depth(z, 2), 2).numpy(),
                                  z)


def test_space_to_batch_as_documented():
    x = np.arange(1, 17).reshape(1, 4, 4, 1)
    y = tf.space_to_batch(x, [2, 2], [[0, 0], [0, 0]]).numpy()
    assert y[..., 0].tolist() == [[[1, 3], [9, 11]], [[2, 4], [10, 12]], [[5, 7], [13, 15]],
                                  [[6, 8], [14, 16]]]
    x2 = np.arange(1, 17).reshape(2, 2, 4, 1)
    y2 = tf.space_to_batch_nd(x2, [2, 2], [[0, 0], [2, 0]]).numpy()
    assert y2.shape == (8, 1, 3, 1)
    assert y2[..., 0].tolist() == [[[0, 1, 3]], [[0, 9, 11]], [[0, 2, 4]], [[0, 10, 12]],
                                   [[0, 5, 7]], [[0, 13, 15]], [[0, 6, 8]], [[0, 14, 16]]]
    back = tf.batch_to_space(y2, [2, 2], [[0, 0], [2, 0]]).numpy()
    np.testing.assert_array_equal(back, x2)
    assert tf.nn.space_to_batch is tf.space_to_batch
    one_d = tf.space_to_batch(np.arange(6).reshape(1, 6, 1), [3], [[0, 0]]).numpy()
    assert one_d[..., 0].tolist() == [[0, 3], [1, 4], [2, 5]]


def _grad_check(fn, x):
    w = RNG.normal(size=np.shape(fn(tf.constant(x))))
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(fn(xt) * w)
    got = tape.gradient(loss, xt).numpy()
    want = central_differences(lambda v: float(tf.reduce_sum(fn(tf.constant(v)) * w)), x)
    np.testing.assert_allclose(got, want, atol=1e-6)


F_DIL, F_ERO = tf.constant(RNG.normal(size=(2, 2, 4))), tf.constant(RNG.normal(size=(2, 1, 4)))


@pytest.mark.parametrize("fn", [
    lambda x: tf.nn.depth_to_space(x, 2),
    lambda x: tf.space_to_batch(x, [2, 1], [[1, 1], [0, 0]]),
    lambda x: tf.batch_to_space(x, [2, 1], [[0, 1], [0, 0]]),
    lambda x: tf.nn.crelu(x),
    lambda x: tf.nn.l2_loss(x),
    lambda x: tf.nn.weighted_cross_entropy_with_logits(0.3, x, 2.5),
    lambda x: tf.nn.log_poisson_loss(3.0, x, compute_full_loss=True),
    lambda x: tf.stack(tf.nn.weighted_moments(x, [1, 2], 1.0 + tf.abs(x))[:2]),
    lambda x: tf.nn.dilation2d(x, F_DIL, [1, 1, 1, 1],
                               "SAME", dilations=[1, 2, 1, 1]),
    lambda x: tf.nn.erosion2d(x, F_ERO, [1, 2, 1, 1],
                              "VALID"),
], ids=["depth_to_space", "space_to_batch", "batch_to_space", "crelu", "l2_loss",
        "weighted_xent", "log_poisson", "weighted_moments", "dilation2d", "erosion2d"])
def test_gradients_equal_finite_differences(fn):
    _grad_check(fn, RNG.normal(size=(2, 4, 3, 4)))


def test_losses_match_tensorflow_formulas():
    z = RNG.normal(size=(5,)) * 3
    t = (RNG.random(5) > 0.5).astype(np.float64)
    sig = 1 / (1 + np.exp(-z))
    want = -(t * np.log(sig) * 2.5 + (1 - t) * np.log(1 - sig))
    np.testing.assert_allclose(tf.nn.weighted_cross_entropy_with_logits(t, z, 2.5).numpy(), want,
                               rtol=1e-12)
    c = np.array([0.0, 0.5, 1.0, 2.0, 7.0])
    full = np.where(c > 1, c * np.log(np.maximum(c, 1)) - c + 0.5 * np.log(2 * np.pi *
                                                                          np.maximum(c, 1)), 0)
    np.testing.assert_allclose(tf.nn.log_poisson_loss(c, z, compute_full_loss=True).numpy(),
                               np.exp(z) - z * c + full, rtol=1e-12)
    assert float(tf.nn.l2_loss(np.array([3.0, 4.0]))) == 12.5
    assert float(tf.nn.zero_fraction(np.zeros((2, 2)))) == 1.0
    assert tf.nn.zero_fraction([1, 2]).dtype == tf.float32


def test_moment_helpers_agree_with_numpy():
    x = RNG.normal(size=(3, 4, 5))
    count, m_ss, v_ss, shift = tf.nn.sufficient_statistics(x, [0, 2], shift=0.5)
    mean, var = tf.nn.normalize_moments(count, m_ss, v_ss, shift)
    np.testing.assert_allclose(mean.numpy(), x.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), x.var((0, 2)), rtol=1e-10)
    assert float(count) == 15.0
    w = RNG.random((3, 1, 5))
    m, v = tf.nn.weighted_moments(x, [0, 2], w, keepdims=True)
    wb = np.broadcast_to(w, x.shape)
    wm = (wb * x).sum((0, 2), keepdims=True) / wb.sum((0, 2), keepdims=True)
    np.testing.assert_allclose(m.numpy(), wm, rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), (wb * (x - wm) ** 2).sum((0, 2), keepdims=True) /
                               wb.sum((0, 2), keepdims=True), rtol=1e-12)


def test_replica_loss_scaling():
    per = np.array([1.0, 2.0, 3.0, 6.0])
    assert float(tf.nn.compute_average_loss(per)) == 3.0
    assert float(tf.nn.compute_average_loss(per, sample_weight=0.5, global_batch_size=2)) == 3.0
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.nn.compute_average_loss(1.0)
    assert float(tf.nn.scale_regularization_loss(np.array([1.0, 2.0]))) == 3.0


def test_collapse_repeated_eager_and_staged():
    labels = np.array([[1, 1, 2, 2, 2, 3, 3], [4, 4, 5, 5, 6, 6, 6], [7, 7, 7, 7, 7, 7, 7]])
    lengths = np.array([5, 7, 2])
    out, n = tf.nn.collapse_repeated(labels, lengths)
    assert out.numpy().tolist() == [[1, 2, 0], [4, 5, 6], [7, 0, 0]]
    assert n.numpy().tolist() == [2, 3, 1]
    sout, sn = tf.function(tf.nn.collapse_repeated)(labels, lengths)
    assert sout.numpy().tolist() == out.numpy().tolist() and sn.numpy().tolist() == [2, 3, 1]


def _morph_ref(x, f, strides, rates, padding, op):
    n, h, w, c = x.shape
    fh, fw, _ = f.shape
    eh, ew = (fh - 1) * rates[0] + 1, (fw - 1) * rates[1] + 1
    if padding == "VALID":
        oh, ow, top, left = (h - eh) // strides[0] + 1, (w - ew) // strides[1] + 1, 0, 0
    else:
        oh, ow = -(-h // strides[0]), -(-w // strides[1])
        top = max((oh - 1) * strides[0] + eh - h, 0) // 2
        left = max((ow - 1) * strides[1] + ew - w, 0) // 2
    out = np.full((n, oh, ow, c), -np.inf if op == "dilation" else np.inf)
    for y in range(oh):
        for xx in range(ow):
            for dy in range(fh):
                for dx in range(fw):
                    iy = y * strides[0] + dy * rates[0] - top
                    ix = xx * strides[1] + dx * rates[1] - left
                    if 0 <= iy < h and 0 <= ix < w:
                        if op == "dilation":
                            out[:, y, xx] = np.maximum(out[:, y, xx], x[:, iy, ix] + f[dy, dx])
                        else:
                            v = x[:, iy, ix] - f[fh - 1 - dy, fw - 1 - dx]
                            out[:, y, xx] = np.minimum(out[:, y, xx], v)
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides, rates", [((1, 1), (1, 1)), ((2, 1), (1, 2)), ((1, 3), (2, 1))])
def test_morphology_against_a_loop_reference(padding, strides, rates):
    x, f = RNG.normal(size=(2, 7, 8, 3)), RNG.normal(size=(3, 2, 3))
    s, r = [1, *strides, 1], [1, *rates, 1]
    np.testing.assert_allclose(tf.nn.dilation2d(x, f, s, padding, dilations=r).numpy(),
                               _morph_ref(x, f, strides, rates, padding, "dilation"))
    np.testing.assert_allclose(tf.nn.erosion2d(x, f, s, padding, dilations=r).numpy(),
                               _morph_ref(x, f, strides, rates, padding, "erosion"))


@pytest.mark.parametrize("fn, backends", [
    (lambda v: tf.nn.space_to_depth(v, 2), ("reference",)),
    (lambda v: tf.space_to_batch(v, [2, 3], [[0, 0], [0, 0]]), ("reference", "numba")),
    (lambda v: tf.nn.dilation2d(v, tf.ones([2, 2, 4], tf.float64), [1, 1, 1, 1], "SAME"),
     ("reference", "numba")),
    (lambda v: tf.nn.weighted_moments(v, [0], 2.0)[1], ("reference",)),
], ids=["space_to_depth", "space_to_batch", "dilation2d", "weighted_moments"])
def test_staged_equals_eager(fn, backends):
    # (Numba for two: a cold compile costs seconds, and the others are the same primitives)
    x = RNG.normal(size=(4, 4, 6, 4))
    spec = tf.TensorSpec([None, 4, 6, 4], tf.float64)
    for backend in backends:
        staged = tf.function(fn, backend=backend, input_signature=[spec])(x)
        np.testing.assert_allclose(staged.numpy(), fn(tf.constant(x)).numpy(), rtol=1e-12)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="its square must divide the depth 3"):
        tf.nn.depth_to_space(np.zeros((1, 2, 2, 3)), 2)
    with pytest.raises(ValueError, match="must be multiples of block_shape"):
        tf.space_to_batch(np.zeros((1, 3, 4, 1)), [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="must be a multiple of the product of block_shape"):
        tf.batch_to_space(np.zeros((3, 2, 2, 1)), [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
        tf.nn.dilation2d(np.zeros((1, 3, 3, 1)), np.zeros((2, 2, 1)), [1, 1, 1, 1], "FULL")
    with pytest.raises(ValueError, match=r"strides must be \[1, rows, cols, 1\]"):
        tf.nn.erosion2d(np.zeros((1, 3, 3, 1)), np.zeros((2, 2, 1)), [2, 2], "SAME")
