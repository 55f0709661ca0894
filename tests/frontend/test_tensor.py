"""Eager Tensor surface: printing, Python/NumPy interop, indexing, bad inputs."""
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


# ---------------------------------------------------------------------------- printing
def test_str_format():
    assert str(tf.constant([[2.0]])) == "stagecraft.Tensor([[2.]], shape=(1, 1), dtype=float32)"
    assert str(tf.constant(3)) == "stagecraft.Tensor(3, shape=(), dtype=int32)"
    assert str(tf.constant(1.5)) == "stagecraft.Tensor(1.5, shape=(), dtype=float32)"
    assert str(tf.constant([True, False])) == \
        "stagecraft.Tensor([ True False], shape=(2,), dtype=bool)"
    # multi-line values start on their own line, exactly like TF's numpy_text
    assert str(tf.constant([[1, 2], [3, 4]])) == \
        "stagecraft.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"


def test_repr_format():
    assert repr(tf.constant(3.0)) == "<stagecraft.Tensor: shape=(), dtype=float32, numpy=3.0>"
    assert repr(tf.constant(True)) == "<stagecraft.Tensor: shape=(), dtype=bool, numpy=True>"
    assert repr(tf.constant([1, 2])) == \
        "<stagecraft.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>"
    assert repr(tf.constant([[2.0]])) == \
        "<stagecraft.Tensor: shape=(1, 1), dtype=float32, numpy=array([[2.]], dtype=float32)>"
    assert repr(tf.constant([[1, 2], [3, 4]])) == (
        "<stagecraft.Tensor: shape=(2, 2), dtype=int32, numpy=\n"
        "array([[1, 2],\n       [3, 4]], dtype=int32)>")


def test_format_spec_on_scalar():
    assert f"{tf.constant(2.5):.2f}" == "2.50"


# ------------------------------------------------------------------- Python conversions
def test_numpy_of_scalar_is_numpy_scalar():
    n = tf.constant(3.0).numpy()
    assert isinstance(n, np.float32)
    assert not isinstance(n, np.ndarray)
    assert isinstance(tf.constant(3).numpy(), np.int32)
    a = tf.constant([1.0]).numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32


def test_bool_int_float():
    assert bool(tf.constant(1.0)) is True
    assert bool(tf.constant(0)) is False
    assert int(tf.constant(3)) == 3
    assert float(tf.constant(2.5)) == 2.5
    with pytest.raises(ValueError):
        bool(tf.constant([1.0, 2.0]))


def test_len_and_iter():
    t = tf.constant([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    assert all(isinstance(r, tf.Tensor) for r in rows)
    assert rows[2].numpy().tolist() == [5, 6]
    with pytest.raises(TypeError) as e:
        len(tf.constant(1.0))
    assert "len()" in first_line(e)
    with pytest.raises(TypeError):
        iter(tf.constant(1.0))


def test_index_dunder():
    assert [10, 20, 30][tf.constant(2)] == 30
    assert list(range(10))[tf.constant(1):tf.constant(3)] == [1, 2]
    with pytest.raises(TypeError) as e:
        [1, 2][tf.constant(1.0)]
    assert "scalar integer" in first_line(e)
    with pytest.raises(TypeError):
        [1, 2][tf.constant([1])]


def test_array_protocol_and_numpy_functions():
    t = tf.constant([1.0, 2.0])
    a = np.asarray(t)
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    assert np.sum(t) == 3.0
    assert float(np.exp(tf.constant(0.0))) == 1.0
    assert np.array(t, dtype=np.float64).dtype == np.float64


def test_ndarray_plus_tensor_is_tensor():
    t = tf.constant([1.0, 2.0])
    for r in (np.array([1.0, 2.0], dtype=np.float32) + t, t + np.array([1.0, 2.0],
                                                                        dtype=np.float32)):
        assert type(r) is tf.Tensor
        assert r.numpy().tolist() == [2.0, 4.0]
    r = np.float32(1.0) + tf.constant(1.0)
    assert type(r) is tf.Tensor


def test_python_scalars_take_tensor_dtype():
    r = tf.constant(1.0) + 1
    assert r.dtype == tf.float32 and r.numpy() == 2.0
    r = 2 * tf.constant([1, 2])
    assert r.dtype == tf.int32


def test_eq_elementwise_and_none():
    r = tf.constant([1, 2]) == tf.constant([1, 3])
    assert isinstance(r, tf.Tensor)
    assert r.numpy().tolist() == [True, False]
    assert (tf.constant([1, 2]) != tf.constant([1, 3])).numpy().tolist() == [False, True]
    assert (tf.constant(1) == None) is False  # noqa: E711
    assert (tf.constant(1) != None) is True  # noqa: E711


def test_eq_incompatible_shapes_is_falsy_not_error():
    r = tf.constant([1.0, 2.0]) == tf.constant([1.0, 2.0, 3.0])
    assert not bool(r)
    assert bool(tf.constant([1.0, 2.0]) != tf.constant([1.0, 2.0, 3.0]))


def test_hash_raises_with_hint():
    t = tf.constant(1.0)
    with pytest.raises(TypeError) as e:
        hash(t)
    assert "unhashable" in first_line(e)
    assert "ref()" in first_line(e)
    with pytest.raises(TypeError):
        {t: 1}
    d = {t.ref(): 1}
    assert d[t.ref()] == 1
    assert t.ref().deref() is t


def test_tensor_cannot_be_constructed_directly():
    with pytest.raises(TypeError):
        tf.Tensor([1.0])


def test_properties():
    t = tf.constant([[1.0, 2.0, 3.0]])
    assert t.shape == (1, 3)
    assert t.shape.as_list() == [1, 3]
    assert t.ndim == 2
    assert t.dtype == tf.float32
    assert t.device == "/job:localhost/replica:0/task:0/device:CPU:0"


# ---------------------------------------------------------------------------- indexing
@pytest.fixture
def m():
    return tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))


def test_index_int_and_negative(m):
    assert m[1].numpy().tolist() == [4.0, 5.0, 6.0, 7.0]
    assert m[-1, -1].numpy() == 11.0
    assert m[1].shape == (4,)
    assert m[1, 2].shape == ()


def test_index_slices(m):
    assert m[:, 1:3].numpy().tolist() == [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]]
    assert m[1:, ::2].numpy().tolist() == [[4.0, 6.0], [8.0, 10.0]]


def test_index_negative_steps(m):
    assert m[-1, ::-1].numpy().tolist() == [11.0, 10.0, 9.0, 8.0]
    assert m[::-2, 0].numpy().tolist() == [8.0, 0.0]
    assert m[2:0:-1, 3].numpy().tolist() == [11.0, 7.0]


def test_index_newaxis_and_ellipsis(m):
    assert m[tf.newaxis].shape == (1, 3, 4)
    assert m[:, tf.newaxis].shape == (3, 1, 4)
    assert m[None, ..., None].shape == (1, 3, 4, 1)
    assert m[..., 0].numpy().tolist() == [0.0, 4.0, 8.0]
    assert m[..., 1, :].numpy().tolist() == [4.0, 5.0, 6.0, 7.0]


def test_index_scalar_int_tensors(m):
    assert m[tf.constant(1), tf.constant(2)].numpy() == 6.0
    assert m[tf.constant(-1)].numpy().tolist() == [8.0, 9.0, 10.0, 11.0]
    assert m[tf.constant(1):tf.constant(3), 0].numpy().tolist() == [4.0, 8.0]


def test_index_out_of_range(m):
    with pytest.raises(InvalidArgumentError) as e:
        m[5]
    assert "out of bounds" in first_line(e)


def test_indexing_is_differentiable(m):
    with tf.GradientTape() as t:
        t.watch(m)
        y = m[1, ::-1] * 2.0
    g = t.gradient(y, m)
    assert g.numpy().tolist() == [[0.0] * 4, [2.0] * 4, [0.0] * 4]


# ------------------------------------------------------------------------- bad inputs
def test_mixed_dtypes():
    with pytest.raises(InvalidArgumentError) as e:
        tf.constant(1.0) + tf.constant(1)
    assert "same dtype" in first_line(e)
    with pytest.raises(InvalidArgumentError):
        tf.add(tf.constant([1.0]), tf.constant([1.0], dtype=tf.float64))


def test_python_float_with_int_tensor():
    with pytest.raises(TypeError):
        tf.constant(1) + 1.5


def test_incompatible_shapes():
    with pytest.raises(InvalidArgumentError) as e:
        tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0])
    assert "Incompatible shapes" in first_line(e)
    with pytest.raises(InvalidArgumentError) as e:
        tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))
    assert "Matrix size-incompatible" in first_line(e)


def test_bad_axes():
    with pytest.raises(InvalidArgumentError) as e:
        tf.reduce_sum(tf.constant([1.0, 2.0]), axis=3)
    assert "out of range" in first_line(e)
    with pytest.raises(InvalidArgumentError) as e:
        tf.concat([tf.ones([2]), tf.ones([2])], axis=1)
    assert "out of range" in first_line(e)


def test_ragged_list():
    with pytest.raises(ValueError) as e:
        tf.constant([[1, 2], [3]])
    assert "non-rectangular" in first_line(e)


def test_strings_rejected():
    with pytest.raises(TypeError):
        tf.constant("abc")
    with pytest.raises(TypeError):
        tf.constant(["a", "b"])
    with pytest.raises(TypeError):
        tf.convert_to_tensor(np.array(["a"]))


def test_watch_ndarray_names_ndarray():
    with pytest.raises(ValueError) as e:
        tf.GradientTape().watch(np.array([1.0, 2.0]))
    assert "'ndarray'" in first_line(e)


def test_gather_out_of_range():
    with pytest.raises(InvalidArgumentError) as e:
        tf.gather(tf.constant([1.0, 2.0]), 5)
    assert "not in [0, 2)" in first_line(e)
    with pytest.raises(InvalidArgumentError):
        tf.gather(tf.constant([1.0, 2.0]), [0, -1])
    assert tf.gather(tf.constant([1.0, 2.0, 3.0]), [2, 0]).numpy().tolist() == [3.0, 1.0]


def test_error_location_points_at_caller():
    with pytest.raises(InvalidArgumentError) as e:
        tf.constant(1.0) + tf.constant(1)
    assert "test_tensor.py" in str(e.value)


# ---------------------------------------------------------------------- conversion dtypes
def test_default_dtypes():
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2 ** 40).dtype == tf.int64
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant(np.array([1.0])).dtype == tf.float64
    assert tf.constant(np.array([1], dtype=np.int64)).dtype == tf.int64


def test_constant_copies_ndarray():
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = tf.constant(a)
    a[0] = 9.0
    assert t.numpy().tolist() == [1.0, 2.0]


def test_binary_op_accepts_equal_but_not_identical_numpy_dtypes():
    # Numba's disk cache boxes results with unpickled dtype objects: equal to numpy's
    # singletons but not identical. Ops must treat them as the same dtype.
    import pickle
    odd = np.zeros(3, dtype=pickle.loads(pickle.dumps(np.dtype("float64"))))
    assert odd.dtype is not np.dtype("float64")
    out = tf.constant(odd) * tf.constant([1.0, 2.0, 3.0], tf.float64)
    assert out.dtype == tf.float64


@pytest.mark.parametrize("staged", [False, True])
def test_numpy_arrays_adopt_the_tensor_dtype_as_in_tensorflow(staged):
    """TF converts the NumPy arrays of an op to the dtype of its tensor inputs (int to float,
    float64 to float32, int64 to int32); a lossy float to int conversion raises."""
    def f(x, i):
        return (x + np.array([1.0, 2.0]), np.array([1, 2]) * x, i + np.array([3, 4], np.int64))
    f = tf.function(f) if staged else f
    a, b, c = f(tf.constant([1.0, 2.0]), tf.constant([1, 2]))
    assert (a.dtype, b.dtype, c.dtype) == (tf.float32, tf.float32, tf.int32)
    assert a.numpy().tolist() == [2.0, 4.0] and c.numpy().tolist() == [4, 6]
    with pytest.raises(TypeError, match="^add: cannot use array"):
        tf.constant([1, 2]) + np.array([1.5, 2.5])
