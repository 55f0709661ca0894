"""Shapes known only when the function runs (issue 14, item 2): every op that takes a shape
accepts a list mixing ints and scalar int tensors, a 1-D int tensor or a TensorShape, eagerly,
staged on the reference interpreter and compiled by Numba; results keep the dims known when
tracing, and `tf.shape(x)[i]` of a static dim is folded to that dim."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ops.array_ops import ShapeArg, normalize_shape
from stagecraft.errors import InvalidArgumentError

BACKENDS = ["reference", "numba"]
X = np.arange(12, dtype=np.float32).reshape(4, 3)


def shape_ops(x, seen):
    """One use of every shape-taking op, with shapes built from tf.shape(x)."""
    n = tf.shape(x)[0]
    outs = {
        "zeros": tf.zeros([n, 8]),
        "ones": tf.ones(tf.shape(x), tf.int32),
        "fill": tf.fill([n, 2], 1.5),
        "reshape": tf.reshape(x, [n, -1, 1]),
        "reshape_flat": tf.reshape(x, [-1]),
        "reshape_scalar_dims": tf.reshape(x, [n * 3]),
        "broadcast_to": tf.broadcast_to(x[:, :1], tf.shape(x)),
        "tile": tf.tile(x, [2, n]),
        "eye": tf.eye(n, batch_shape=[2]),
        "zeros_like": tf.zeros_like(x),
    }
    seen.update({k: v.shape.as_list() for k, v in outs.items()})
    return outs


STATIC_UNKNOWN = {"zeros": [None, 8], "ones": [None, 3], "fill": [None, 2],
                  "reshape": [None, None, 1], "reshape_flat": [None],
                  "reshape_scalar_dims": [None], "broadcast_to": [None, 3], "tile": [None, None],
                  "eye": [2, None, None], "zeros_like": [None, 3]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_shapes_from_tensors_staged_with_unknown_dims_equal_eager(backend):
    seen: dict = {}
    f = tf.function(lambda x: shape_ops(x, seen), backend=backend,
                    input_signature=[tf.TensorSpec([None, 3])])
    for rows in (4, 1):
        x = tf.constant(X[:rows])
        got, want = f(x), shape_ops(x, {})
        for k in want:
            assert got[k].dtype == want[k].dtype, k
            np.testing.assert_array_equal(got[k].numpy(), want[k].numpy(), err_msg=k)
    assert f.experimental_get_tracing_count() == 1
    f.get_concrete_function()
    assert {k: seen[k] for k in STATIC_UNKNOWN} == STATIC_UNKNOWN


def test_static_dims_are_folded_and_no_run_time_shape_op_is_left():
    seen: dict = {}
    f = tf.function(lambda x: shape_ops(x, seen), backend="reference",
                    input_signature=[tf.TensorSpec([4, 3])])
    graph = str(f.get_concrete_function().graph)
    assert seen["zeros"] == [4, 8] and seen["reshape"] == [4, 3, 1]
    assert seen["tile"] == [8, 12] and seen["eye"] == [2, 4, 4]
    assert "_dynamic" not in graph


def test_a_known_dim_of_a_partly_known_shape_is_kept():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3])], backend="reference")
    def f(x):
        y = tf.zeros([tf.shape(x)[1] * 2, tf.shape(x)[0]])
        seen.append(y.shape.as_list())
        return y

    assert f(tf.constant(X)).shape == [6, 4]
    assert seen == [[6, None]]


def test_eager_shapes_given_as_tensors_and_mixed_lists():
    n = tf.constant(2)
    assert tf.zeros([n, 3]).shape == [2, 3]
    assert tf.ones(tf.constant([2, 1], tf.int64)).numpy().tolist() == [[1.0], [1.0]]
    assert tf.fill(tf.TensorShape([1, 2]), 7).numpy().tolist() == [[7, 7]]
    assert tf.reshape(tf.range(6), [n, -1]).shape == [2, 3]
    assert tf.broadcast_to(tf.constant([1, 2]), [n, 2]).numpy().tolist() == [[1, 2], [1, 2]]
    assert tf.tile(tf.constant([[1]]), np.array([1, 3])).numpy().tolist() == [[1, 1, 1]]
    assert tf.zeros(3).shape == [3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_through_shapes_known_at_run_time_equal_eager(backend):
    def loss(x):
        n = tf.shape(x)[0]
        y = tf.reshape(x, [n, -1]) * tf.broadcast_to(tf.reshape(x[:, 0], [n, 1]), [n, 3])
        return tf.reduce_sum(tf.tile(y, [1, n]) ** 2) + tf.reduce_sum(tf.fill([n], x[0, 0]))

    f = tf.function(loss, backend=backend, input_signature=[tf.TensorSpec([None, 3])])
    x = tf.constant(X / 10)
    grads = []
    for fn in (f, loss):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_run_time_shape_errors_name_the_op_on_both_backends():
    for backend in BACKENDS:
        f = tf.function(lambda x, k: tf.reshape(x, [k, -1]), backend=backend,
                        input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([], tf.int32)])
        with pytest.raises(InvalidArgumentError, match="reshape"):
            f(tf.constant(X), tf.constant(5))
        g = tf.function(lambda k: tf.zeros([k, 2]), backend=backend,
                        input_signature=[tf.TensorSpec([], tf.int32)])
        assert g(tf.constant(3)).shape == [3, 2]
        with pytest.raises(InvalidArgumentError, match="fill: dim.*non-negative"):
            g(tf.constant(-1))


@pytest.mark.parametrize("shape, error, match", [
    (tf.TensorShape([None, 2]), ValueError, "unknown dimensions.*tf.shape"),
    ([None, 2], TypeError, r"dimension 0 .* is None.*tf.shape\(x\)\[0\]"),
    ([2, 1.5], TypeError, "dimension 1"),
    (tf.constant([2.0]), TypeError, "int32 or int64"),
    (tf.constant([[2]]), ValueError, "1-D"),
    ([tf.constant([2])], TypeError, "scalar int32/int64 tensor"),
    ([True], TypeError, "dimension 0"),
    ("2", TypeError, "a shape must be"),
])
def test_bad_shape_arguments_say_what_is_wrong(shape, error, match):
    with pytest.raises(error, match=match):
        tf.zeros(shape)


def test_normalize_shape_contract():
    assert normalize_shape((2, np.int64(3)), "t") == ShapeArg((2, 3), None)
    assert normalize_shape(tf.constant([4]), "t").dims == (4,)
    assert normalize_shape([-1, 2], "t", minus_one=True).dims == (-1, 2)
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None], tf.int64)],
                 backend="reference")
    def f(x, s):
        a = normalize_shape([tf.shape(x)[0], 5], "t")
        b = normalize_shape(s, "t")
        c = normalize_shape(tf.shape(x), "t")
        d = normalize_shape([tf.shape(x)[1], 5], "t")
        seen.extend([a.dims, a.tensor.dtype, a.tensor.shape.as_list(), b.dims, b.tensor is s,
                     c.dims, d])
        return x

    f(tf.constant(X), tf.constant([1], tf.int64))
    assert seen == [(None, 5), tf.int32, [2], None, True, (None, 3), ShapeArg((3, 5), None)]


def test_get_static_value_follows_captures_into_loop_bodies():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3])], backend="reference")
    def f(x):
        k = tf.shape(x)[1]
        acc = tf.zeros([3])
        for _ in tf.range(2):
            z = tf.zeros([k])     # k is captured from the enclosing graph
            seen.append(z.shape.as_list())
            acc = acc + z
        return acc

    assert f(tf.constant(X)).numpy().tolist() == [0.0, 0.0, 0.0]
    assert seen and all(s == [3] for s in seen)
