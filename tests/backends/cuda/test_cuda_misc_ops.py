"""CUDA eager kernels beyond the generated examples: cumulative_logsumexp's exclusive forms
(the op table's examples are inclusive), the rejection samplers random_gamma,
random_poisson and random_binomial, whose values must equal the reference kernels' element for
element (one sampler source for every backend), softmax on infinite and NaN logits, and the
sparse cross-entropy's NaN rows for labels out of range (TensorFlow's GPU behaviour), eagerly
and staged."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import eager, memory
from stagecraft.ir import OPS

pytestmark = pytest.mark.cuda


def _run(op, inputs, attrs):
    return memory.to_host(eager.run(op, [memory.to_device(np.asarray(x)) for x in inputs], attrs))


@pytest.mark.parametrize("axis, reverse", [(0, False), (1, True), (-1, False)])
def test_cumulative_logsumexp_exclusive(axis, reverse):
    x = np.array([[-1000.0, 0.5, 3.0], [700.0, 710.0, -5.0]])
    attrs = {"axis": axis, "exclusive": True, "reverse": reverse}
    np.testing.assert_allclose(_run("cumulative_logsumexp", [x], attrs),
                               OPS["cumulative_logsumexp"].kernel(x, **attrs), rtol=1e-15)


@pytest.mark.parametrize("op, params", [("random_gamma", [0.3, 1.0, 4.5, 0.0, -1.0]),
                                        ("random_poisson", [0.0, 0.7, 9.0, 30.0, -2.0])])
def test_rejection_samplers_equal_the_reference(op, params):
    seed = np.array([3, 4, 5], np.int64)
    for dtype in (np.float32, np.float64):
        p = np.array(params, dtype)
        want = OPS[op].kernel(seed, p, shape=(3,))
        got = _run(op, [seed, p], {"shape": (3,)})
        assert got.dtype == want.dtype and got.shape == (3, 5)
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)
        assert (np.isnan(got) == np.isnan(want)).all()


def test_binomial_sampler_equals_the_reference():
    seed = np.array([3, 4, 5], np.int64)
    n = np.array([0.0, 5.0, 40.0, 1000.0, 12.0, 7.0, 3.0, np.nan])
    p = np.array([0.5, 0.3, 0.6, 0.5, 0.0, 0.9, 1.0, 0.5])
    for dtype in (np.float32, np.float64):
        want = OPS["random_binomial"].kernel(seed, n.astype(dtype), p.astype(dtype))
        got = _run("random_binomial", [seed, n.astype(dtype), p.astype(dtype)], {})
        assert got.dtype == want.dtype and got.shape == n.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("row_block_min", [32, 2])   # one thread per row; a block per row
def test_sparse_cross_entropy_gives_nan_rows_for_labels_out_of_range(staged, row_block_min,
                                                                      monkeypatch):
    import stagecraft as tf
    from stagecraft.backends.numba_cuda.kernels import softmax
    monkeypatch.setattr(softmax, "ROW_BLOCK_MIN", row_block_min)

    def loss_and_gradient(labels, logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        return loss, tape.gradient(loss, logits)

    logits = np.array([[-np.inf, 2.0, 0.5], [0.0, 0.0, 0.0], [3.0, -1.0, 0.0]], np.float32)
    labels = np.array([2, 3, -1], np.int32)   # (a -inf first logit: a finite row)
    run = tf.function(loss_and_gradient) if staged else loss_and_gradient
    with tf.device("/gpu:0"):
        loss, grad = run(tf.constant(labels), tf.constant(logits))
    assert "GPU" in loss.device and "GPU" in grad.device
    loss, grad = loss.numpy(), grad.numpy()
    want_loss, want_grad = loss_and_gradient(tf.constant(labels[:1]), tf.constant(logits[:1]))
    np.testing.assert_allclose(loss[0], want_loss.numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(grad[0], want_grad.numpy()[0], rtol=1e-6)
    assert np.isnan(loss[1:]).all() and np.isnan(grad[1:]).all()


# (ROW_BLOCK_MIN, ONE_THREAD_MAX): one thread per line; a block per row (lines of 3 and 5);
# the library's reductions (lines of 3 and 5)
KERNEL_CHOICES = [(32, 1024), (2, 1024), (32, 2)]


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("row_block_min, one_thread_max", KERNEL_CHOICES)
def test_softmax_of_infinite_and_nan_logits_equals_the_cpu(staged, row_block_min,
                                                            one_thread_max, monkeypatch):
    import stagecraft as tf
    from stagecraft.backends.numba_cuda.kernels import softmax
    monkeypatch.setattr(softmax, "ROW_BLOCK_MIN", row_block_min)
    monkeypatch.setattr(softmax, "ONE_THREAD_MAX", one_thread_max)
    x = np.array([[-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0], [-np.inf] * 3, [0.0, 1.0, np.nan],
                  [2.0, -1.0, 0.5]], np.float32)

    def soft(x):
        return tf.nn.softmax(x), tf.nn.log_softmax(x, axis=0)

    run = tf.function(soft) if staged else soft
    with tf.device("/gpu:0"):
        got = run(tf.constant(x))
    for g, want in zip(got, soft(tf.constant(x))):
        assert "GPU" in g.device
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6)   # (NaNs where NaN)
