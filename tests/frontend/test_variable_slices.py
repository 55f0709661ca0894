"""Sliced assignment and scatter_nd updates of variables, eagerly and staged (TF 2 semantics)."""
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError, UnimplementedError

BACKENDS = ["reference", "numba"]


def first_line(e):
    return str(e.value).splitlines()[0]


def test_sliced_assign_eager():
    v = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert v[1:2].assign([[7.0, 8.0, 9.0]]) is v
    v[0].assign([0.0, 0.0, 0.0])
    v[:, 1].assign_add([10.0, 10.0])
    v[1, -1].assign_sub(1.0)
    np.testing.assert_array_equal(v.numpy(), [[0, 10, 0], [7, 18, 8]])
    assert v[1, 1].numpy() == 18.0 and float(v[0, 1] + 1.0) == 11.0


def test_slice_is_read_when_indexed():
    v = tf.Variable([1, 2, 3])
    s = v[:2]
    v.assign([5, 6, 7])
    assert s.numpy().tolist() == [1, 2]


def test_sliced_assign_never_broadcasts():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(UnimplementedError) as e:
        v[0].assign(1.0)
    assert first_line(e) == ("sliced l-value shape [2] does not match r-value shape []. "
                             "Automatic broadcasting not yet implemented.")


@pytest.mark.parametrize("backend", BACKENDS)
def test_sliced_assign_staged(backend):
    v = tf.Variable(tf.zeros([3, 4]))

    @tf.function(backend=backend)
    def f(row, i):
        v[1:3, ::2].assign(row)
        v[i].assign_add(tf.ones([4]))   # a run-time index
        return v.read_value()

    got = f(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant(0))
    want = np.zeros([3, 4], np.float32)
    want[1:3, ::2] = [[1, 2], [3, 4]]
    want[0] += 1
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), want)


def test_sliced_assign_not_differentiable_but_later_reads_are():
    v = tf.Variable([1.0, 2.0, 3.0])
    x = tf.constant([5.0, 6.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        v[:2].assign(x * 2.0)
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [20.0, 24.0, 6.0])


def test_scatter_nd_eager():
    v = tf.Variable([[1, 2], [3, 4], [5, 6]])
    assert v.scatter_nd_update([[2], [0]], [[9, 9], [8, 8]]) is v
    v.scatter_nd_add([[1, 1], [1, 1]], [10, 10])
    v.scatter_nd_sub(tf.constant([[0, 0]], tf.int64), [1])
    assert v.numpy().tolist() == [[7, 8], [3, 24], [9, 9]]


def test_scatter_nd_out_of_range():
    v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InvalidArgumentError) as e:
        v.scatter_nd_update([[1], [5]], [1.0, 2.0])
    assert first_line(e) == "scatter_nd: indices[1] = [5] does not index into shape [4]"
    assert v.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]  # nothing written


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_nd_staged(backend):
    v = tf.Variable(tf.zeros([2, 3]))

    @tf.function(backend=backend)
    def f(indices, updates):
        v.scatter_nd_update(indices, updates)
        v.scatter_nd_add(indices, updates)
        v.scatter_nd_sub([[0, 0]], [1.0])
        return v.read_value()

    got = f(tf.constant([[1, 2], [0, 1]]), tf.constant([3.0, 4.0]))
    assert got.numpy().tolist() == [[-1.0, 8.0, 0.0], [0.0, 0.0, 6.0]]
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant([[1, 3], [0, 1]]), tf.constant([3.0, 4.0]))
    assert "indices[0] = [1, 3] does not index into shape [2,3]" in first_line(e)


def test_slice_is_a_plain_tensor():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = v[0]
    assert type(y) is type(tf.constant(1.0))
    assert tape.gradient(y, v).numpy().tolist() == [1.0, 0.0]
    assert float(tf.function(lambda: v[1], backend="reference")()) == 2.0
    with pytest.raises(AttributeError, match="^'Tensor' object has no attribute 'assign'"):
        tf.constant([1.0]).assign([2.0])
