"""Variable construction, reads and writes (semantics.md §3.1-3.2, checklist 83-87)."""
import numpy as np
import pytest

import stagecraft as tf

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


# ------------------------------------------------------------------------- construction
def test_dtype_inference():  # 83
    assert tf.Variable(1.0).dtype == tf.float32
    assert tf.Variable(1).dtype == tf.int32
    assert tf.Variable(True).dtype == tf.bool
    assert tf.Variable([[1.0, 2.0]]).dtype == tf.float32
    assert tf.Variable(np.array([1.0, 2.0])).dtype == tf.float64
    assert tf.Variable(tf.constant([1, 2])).dtype == tf.int32


def test_dtype_argument_converts():
    v = tf.Variable(1, dtype=tf.float32)
    assert v.dtype == tf.float32
    assert v.numpy() == 1.0
    w = tf.Variable([1.0, 2.0], dtype=tf.float64)
    assert w.dtype == tf.float64
    assert w.numpy().tolist() == [1.0, 2.0]


def test_dtype_argument_incompatible():
    with pytest.raises(TypeError):
        tf.Variable(1.5, dtype=tf.int32)
    with pytest.raises(ValueError) as e:
        tf.Variable(tf.constant(1.5), dtype=tf.int32)
    assert "Tensor conversion requested dtype" in first_line(e)


def test_missing_initial_value():
    with pytest.raises(ValueError):
        tf.Variable()


def test_callable_initial_value():
    calls = []

    def init():
        calls.append(1)
        return tf.ones([2, 3])
    v = tf.Variable(init)
    assert calls == [1]
    assert v.shape == (2, 3)
    assert v.dtype == tf.float32
    assert v.numpy().tolist() == [[1.0] * 3] * 2


def test_variable_from_variable_copies():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(v)
    assert w is not v
    assert w.numpy().tolist() == [1.0, 2.0]
    w.assign([5.0, 6.0])
    assert v.numpy().tolist() == [1.0, 2.0]
    v.assign([7.0, 8.0])
    assert w.numpy().tolist() == [5.0, 6.0]


def test_variable_does_not_alias_numpy_input():
    a = np.array([1.0, 2.0], dtype=np.float32)
    v = tf.Variable(a)
    a[0] = 100.0
    assert v.numpy().tolist() == [1.0, 2.0]


def test_trainable_defaults_true_even_for_ints():
    assert tf.Variable(1.0).trainable is True
    assert tf.Variable(1).trainable is True
    assert tf.Variable(1.0, trainable=False).trainable is False


def test_name_default_and_duplicates():
    assert tf.Variable(1.0).name == "Variable:0"
    a = tf.Variable(1.0, name="w")
    b = tf.Variable(2.0, name="w")
    assert a.name == b.name == "w:0"


def test_unknown_shape_allows_other_shapes():
    v = tf.Variable([1.0, 2.0], shape=tf.TensorShape(None))
    v.assign([1.0, 2.0, 3.0])
    assert v.numpy().tolist() == [1.0, 2.0, 3.0]


# ----------------------------------------------------------------------------- reading
def test_reads_are_tensors():
    v = tf.Variable([1.0, 2.0])
    for t in (v.read_value(), v.value(), tf.convert_to_tensor(v), tf.identity(v)):
        assert isinstance(t, tf.Tensor) and not isinstance(t, tf.Variable)  # on any device
        assert np.asarray(t).tolist() == [1.0, 2.0]


def test_read_is_a_snapshot():
    v = tf.Variable(1.0)
    snap = v.read_value()
    v.assign(2.0)
    assert snap.numpy() == 1.0
    assert v.numpy() == 2.0


def test_ops_return_tensors_not_variables():  # 87
    v = tf.Variable(1.0)
    for r in (v + 1, 1 + v, v * v, -v, v ** 2, tf.add(v, 1.0), v > 0.0):
        assert isinstance(r, tf.Tensor)
        assert not isinstance(r, tf.Variable)
    assert (v + 1).numpy() == 2.0


def test_python_conversions():
    v = tf.Variable([1.0, 2.0])
    assert np.asarray(v).tolist() == [1.0, 2.0]
    assert bool(tf.Variable(0.0)) is False
    assert bool(tf.Variable(3.0)) is True
    assert float(tf.Variable(2.5)) == 2.5
    assert int(tf.Variable(7)) == 7


# ----------------------------------------------------------------------------- writing
def test_assign_returns_object_reading_new_value():
    v = tf.Variable(1.0)
    r = v.assign(3.0)
    assert r is not None
    assert r.numpy() == 3.0
    assert float(r + 1.0) == 4.0
    assert v.numpy() == 3.0


def test_assign_add_and_sub():
    v = tf.Variable([1.0, 2.0])
    r = v.assign_add([10.0, 20.0])
    assert r.numpy().tolist() == [11.0, 22.0]
    r = v.assign_sub([1.0, 2.0])
    assert r.numpy().tolist() == [10.0, 20.0]
    assert v.numpy().tolist() == [10.0, 20.0]
    assert v.dtype == tf.float32


def test_assign_int_variable_keeps_dtype():
    v = tf.Variable(5)
    v.assign_add(2)
    v.assign_sub(1)
    assert v.dtype == tf.int32
    assert v.numpy() == 6


def test_read_value_false_returns_none():  # 86
    v = tf.Variable(1.0)
    assert v.assign(4.0, read_value=False) is None
    assert v.numpy() == 4.0
    assert v.assign_add(1.0, read_value=False) is None
    assert v.numpy() == 5.0
    assert v.assign_sub(2.0, read_value=False) is None
    assert v.numpy() == 3.0


def test_assign_wrong_shape():  # 84
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError) as e:
        v.assign([1.0, 2.0, 3.0])
    assert "Shape mismatch" in first_line(e)
    assert v.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError) as e:
        v.assign_add([[1.0, 2.0]])
    assert "Shape mismatch" in first_line(e)


def test_assign_python_float_to_int_variable():  # 85
    v = tf.Variable(1)
    with pytest.raises(TypeError):
        v.assign(1.5)
    with pytest.raises(TypeError):
        v.assign_add(1.5)
    assert v.numpy() == 1
    assert v.dtype == tf.int32


def test_assign_float_tensor_to_int_variable():  # 85
    v = tf.Variable(1)
    with pytest.raises(ValueError) as e:
        v.assign(tf.constant(1.0))
    assert "Tensor conversion requested dtype" in first_line(e)
    assert v.numpy() == 1


def test_assign_is_not_differentiable():
    v = tf.Variable(1.0)
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        v.assign(x * 2.0)
        y = v * 1.0
    assert y.numpy() == 6.0
    gx, gv = t.gradient(y, [x, v])
    assert gx is None
    assert gv.numpy() == 1.0


# ----------------------------------------------------------------------- hashing, tapes
def test_unhashable_and_ref():
    v = tf.Variable(1.0)
    with pytest.raises(TypeError) as e:
        hash(v)
    assert "ref()" in first_line(e)
    w = tf.Variable(1.0)
    d = {v.ref(): "v", w.ref(): "w"}
    assert d[v.ref()] == "v" and d[w.ref()] == "w"
    assert v.ref().deref() is v
    assert v.ref() == v.ref()
    assert v.ref() != w.ref()


def test_variable_equality_is_elementwise():
    v = tf.Variable([1.0, 2.0])
    assert (v == tf.constant([1.0, 3.0])).numpy().tolist() == [True, False]


def test_non_trainable_not_auto_watched():
    nt = tf.Variable(2.0, trainable=False)
    tr = tf.Variable(2.0)
    with tf.GradientTape() as t:
        y = nt * tr
    assert t.watched_variables() == (tr,)
    g_nt, g_tr = t.gradient(y, [nt, tr])
    assert g_nt is None
    assert g_tr.numpy() == 2.0


def test_int_variable_gradient_none():
    v = tf.Variable(3)
    with tf.GradientTape() as t:
        y = v * 2
    assert t.gradient(y, v) is None


def test_repr():
    assert repr(tf.Variable(1.0)) == \
        "<stagecraft.Variable 'Variable:0' shape=() dtype=float32, numpy=1.0>"
    assert repr(tf.Variable([1, 2], name="v")) == \
        "<stagecraft.Variable 'v:0' shape=(2,) dtype=int32, numpy=array([1, 2], dtype=int32)>"
