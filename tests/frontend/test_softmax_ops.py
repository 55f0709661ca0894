"""The softmax family as primitives (the op table's generated tests check values, gradients
and backends on ordinary inputs): softmax and log_softmax on infinite and NaN logits, eagerly
and staged, and their errors; tf.nn.sparse_softmax_cross_entropy_with_logits as one fused
primitive (and its fused gradient): values and gradients against the softmax formula, labels
of every rank (viewed as [batch, classes] and back, also with shapes unknown when traced),
TensorFlow's errors, and a label out of range raising on the CPU eagerly and in a tf.function
on both CPU backends."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops.softmax import GRAD, NAME

RNG = np.random.default_rng(7)


# TensorFlow's values: a -inf logit gets probability 0; +inf or NaN in a line makes it NaN
SPECIAL = np.array([[-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0], [-np.inf] * 3, [np.nan, 0.0, 1.0],
                    [0.0, 1.0, np.nan]], np.float32)


@pytest.mark.parametrize("backend", [None, "numba", "reference"])
def test_softmax_of_infinite_and_nan_logits(backend):
    soft = lambda x: (tf.nn.softmax(x), tf.nn.log_softmax(x))  # noqa: E731
    run = soft if backend is None else tf.function(soft, backend=backend)
    s, log_s = (t.numpy() for t in run(tf.constant(SPECIAL)))
    np.testing.assert_allclose(s[0], [0.0, 0.26894143, 0.7310586], rtol=1e-6)
    np.testing.assert_allclose(log_s[0], [-np.inf, -1.3132616, -0.3132617], rtol=1e-6)
    assert np.isnan(s[1:]).all() and np.isnan(log_s[1:]).all()


@pytest.mark.parametrize("call, first_line", [
    (lambda: tf.nn.softmax(tf.constant(1.0)),
     "softmax: logits must have at least one dimension, got a scalar."),
    (lambda: tf.nn.log_softmax([1.0, 2.0], axis=1),
     "log_softmax: axis 1 is out of range for a tensor of rank 1; expected an axis in [-1, 1)."),
    (lambda: tf.nn.softmax(tf.constant([1, 2])),
     "softmax: 'logits' has dtype int32, which softmax does not support; supported: float16, "
     "bfloat16, float32, float64. Cast it with tf.cast first."),
])
def test_softmax_errors_say_what_is_wrong(call, first_line):
    with pytest.raises(InvalidArgumentError) as e:
        call()
    assert str(e.value).splitlines()[0] == first_line


def test_softmax_gradient_is_one_op_and_no_exp_when_staged():
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.nn.softmax(x) * tf.range(3.0))
        return y, tape.gradient(y, x)

    ops = [e.op for e in step.get_concrete_function(tf.zeros([2, 3])).graph.eqns]
    assert ops.count("softmax") == 1 and "exp" not in ops and "reduce_max" not in ops


def _formula(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, labels[..., None], -1)[..., 0]


@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 3, 5), (2, 1, 3, 4)])
def test_values_and_gradient_of_every_rank(shape):
    logits = RNG.normal(size=shape).astype(np.float32)
    labels = RNG.integers(0, shape[-1], shape[:-1]).astype(np.int32)
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x)
        total = tf.reduce_sum(loss)
    assert loss.shape == shape[:-1]
    np.testing.assert_allclose(loss.numpy(), _formula(labels, logits), rtol=1e-5, atol=1e-6)
    z = np.exp(logits - logits.max(-1, keepdims=True))
    want = z / z.sum(-1, keepdims=True) - np.eye(shape[-1])[labels]
    np.testing.assert_allclose(tape.gradient(total, x).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", [None, "numba", "reference"])
def test_sparse_loss_and_gradient_of_infinite_logits(backend):
    # -inf (a masked class) leaves the row finite wherever it is; +inf makes the row NaN
    logits = np.array([[-np.inf, 0.0, 1.0], [0.0, -np.inf, 1.0], [np.inf, 0.0, 1.0]], np.float32)

    def loss_and_gradient(labels, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x)
        return loss, tape.gradient(loss, x)

    run = loss_and_gradient if backend is None else tf.function(loss_and_gradient,
                                                                backend=backend)
    loss, grad = (t.numpy() for t in run(tf.constant([1, 2, 1]), tf.constant(logits)))
    np.testing.assert_allclose(loss[:2], [1.3132616, 0.3132617], rtol=1e-6)
    np.testing.assert_allclose(grad[:2], [[0.0, -0.7310586, 0.7310586],
                                          [0.26894143, 0.0, -0.26894143]], rtol=1e-6)
    assert np.isnan(loss[2]) and np.isnan(grad[2]).all()


@pytest.mark.parametrize("backend", ["numba", "reference"])
def test_staged_with_shapes_unknown_when_traced_equals_eager(backend):
    logits = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    labels = RNG.integers(0, 4, (2, 3)).astype(np.int64)
    unknown_rank = tf.function(lambda lab, x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        lab, x), backend=backend, input_signature=[tf.TensorSpec(None, tf.int64),
                                                   tf.TensorSpec(None, tf.float32)])
    unknown_dims = tf.function(lambda lab, x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        lab, x), backend=backend, input_signature=[tf.TensorSpec([None, None], tf.int64),
                                                   tf.TensorSpec([None, None, 4], tf.float32)])
    want = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits).numpy()
    for f in (unknown_rank, unknown_dims):
        got = f(tf.constant(labels), tf.constant(logits))
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_out_of_range_label_raises_eagerly_on_the_cpu():
    logits = np.zeros((3, 4), np.float32)
    for bad in (4, -1):
        with pytest.raises(InvalidArgumentError) as e:
            tf.nn.sparse_softmax_cross_entropy_with_logits(np.array([0, bad, 1]), logits)
        assert str(e.value).splitlines()[0] == (
            f"sparse_softmax_cross_entropy_with_logits: Received a label value of {bad} which "
            f"is outside the valid range of [0, 4). Labels must be class indices, one per row "
            f"of logits.")


@pytest.mark.parametrize("backend", ["numba", "reference"])
@pytest.mark.parametrize("op", [NAME, GRAD])
def test_out_of_range_label_raises_in_a_cpu_function(backend, op):
    # each op checks its own labels (the gradient op runs where no loss is computed)
    def loss_or_gradient(labels, logits):
        if op == GRAD:
            return bind(OPS[GRAD], tf.ones([2]), logits, labels)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)

    f = tf.function(loss_or_gradient, backend=backend)
    logits = tf.zeros([2, 3])
    f(tf.constant([0, 2]), logits)
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant([3, 0]), logits)
    assert str(e.value).splitlines()[0] == (
        f"{op}: Received a label value of 3 which is outside the valid range of [0, 3). Labels "
        f"must be class indices, one per row of logits.")
    assert f"{__file__}:" in str(e.value)   # where: the user's line


@pytest.mark.parametrize("labels, logits, error, first_line", [
    (np.array([0.0, 1.0]), np.zeros((2, 3), np.float32), TypeError,
     "sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64, got float64. "
     "Cast them, e.g. tf.cast(labels, tf.int32)."),
    (np.array([0, 1], np.int8), np.zeros((2, 3), np.float32), TypeError,
     "sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64, got int8. "
     "Cast them, e.g. tf.cast(labels, tf.int32)."),
    (np.array([0, 1]), np.zeros((2, 0), np.float32), InvalidArgumentError,
     "sparse_softmax_cross_entropy_with_logits: Must have at least one class, but got logits "
     "shape [2,0]."),
    (np.array([[0, 1]]), np.zeros((2, 3), np.float32), ValueError,
     "sparse_softmax_cross_entropy_with_logits: labels must have rank 1 (logits rank minus 1), "
     "got shape (1, 2)."),
    (np.array([0, 1, 2]), np.zeros((2, 3), np.float32), ValueError,
     "sparse_softmax_cross_entropy_with_logits: labels have shape (3,) but logits have shape "
     "(2, 3); labels must match the shape of logits except for the last dimension."),
    (np.array(0), np.float32(1.0), ValueError,
     "sparse_softmax_cross_entropy_with_logits: logits must have at least one dimension (the "
     "classes), got a scalar."),
])
def test_errors_say_what_is_wrong(labels, logits, error, first_line):
    with pytest.raises(error) as e:
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    assert str(e.value).splitlines()[0] == first_line


def test_one_fused_op_each_way_when_staged():
    x, labels = tf.zeros([2, 3]), tf.constant([0, 2])

    @tf.function
    def step(labels, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        return loss, tape.gradient(loss, x)

    graph = step.get_concrete_function(labels, x).graph
    ops = [e.op for e in graph.eqns]
    assert ops.count("sparse_softmax_cross_entropy_with_logits") == 1
    assert ops.count("sparse_softmax_cross_entropy_with_logits_grad") == 1
    assert "one_hot" not in ops and "exp" not in ops


def test_vectorized_cross_entropy_with_classes_unknown_when_traced_says_why(caplog):
    @tf.function(input_signature=[tf.TensorSpec([3, 2], tf.int32),
                                  tf.TensorSpec([3, 2, None], tf.float32)])
    def per_example(labels, logits):
        return tf.vectorized_map(
            lambda a: tf.nn.sparse_softmax_cross_entropy_with_logits(a[0], a[1]), (labels, logits))

    labels, logits = RNG.integers(0, 4, (3, 2)).astype(np.int32), RNG.normal(size=(3, 2, 4))
    with caplog.at_level(logging.INFO, logger="stagecraft"):
        got = per_example(tf.constant(labels), tf.constant(logits.astype(np.float32)))
    assert "the number of classes unknown when traced" in caplog.text
    np.testing.assert_allclose(got.numpy(), _formula(labels, logits), rtol=1e-5)
