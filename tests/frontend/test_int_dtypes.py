"""The small and unsigned integer dtypes (tf.int8, int16, uint8, uint16, uint32, uint64) with
TensorFlow's rules: no promotion between tensors, Python scalars adopt the tensor's dtype with
a range check, casts wrap like C, NumPy arrays keep their dtype, which ops accept them, and
every way a tensor is stored (IR text, serialized graphs, checkpoints, SavedModel)."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import dtypes as dt
from stagecraft.ir import serialize
from stagecraft.ir.parser import parse
from stagecraft.ir.printer import print_graph

SMALL = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("name", SMALL)
def test_dtype_objects_exports_and_conversions(name):
    d = getattr(tf, name)
    assert d is tf.as_dtype(name) is tf.as_dtype(np.dtype(name)) is tf.as_dtype(getattr(np, name))
    assert d == name and d.name == name and d.as_numpy_dtype is getattr(np, name)
    assert d.is_integer and not d.is_floating and d.is_unsigned == name.startswith("u")
    assert (d.min, d.max) == (np.iinfo(name).min, np.iinfo(name).max)
    assert tf.as_dtype(d.short) is d  # the IR's spelling (u8, i16, ...)
    a = np.array([[1, 2], [3, 4]], name)
    t = tf.constant(a)
    assert t.dtype is d and t.numpy().dtype == a.dtype
    assert tf.convert_to_tensor(a).dtype is d
    assert tf.constant([1, 2], dtype=d).numpy().dtype == np.dtype(name)
    assert tf.zeros([2], d).dtype is d and tf.ones_like(t).dtype is d


def test_no_promotion_between_tensors_names_both_dtypes():
    with pytest.raises(InvalidArgumentError, match=r"add: 'x' is uint8 but 'y' is int32"):
        tf.constant([1], tf.uint8) + tf.constant([1])
    with pytest.raises(InvalidArgumentError, match=r"'x' is int16 but 'y' is int8"):
        tf.function(lambda a, b: a * b)(tf.constant([1], tf.int16), tf.constant([1], tf.int8))


def test_python_scalars_adopt_the_dtype_with_an_overflow_check():
    x = tf.constant([1, 250], tf.uint8)
    assert (x + 5).dtype is tf.uint8 and (x + 5).numpy().tolist() == [6, 255]
    assert (x + 6).numpy().tolist() == [7, 0]  # tensor arithmetic wraps like TF's
    assert (2 * tf.constant([-3], tf.int8)).numpy().tolist() == [-6]
    for bad, why in [(256, r"out of range \[0, 255\]"), (-1, r"out of range"),
                     (1.5, "not an integer")]:
        with pytest.raises(TypeError, match=f"add: cannot use .* uint8 tensor.*{why}"):
            x + bad
    with pytest.raises(TypeError, match=r"out of range \[-128, 127\]"):
        tf.constant(128, tf.int8)
    assert tf.constant(2**64 - 1, tf.uint64).numpy() == np.uint64(2**64 - 1)
    staged = tf.function(lambda t: t + 300)
    with pytest.raises(TypeError, match="300"):
        staged(tf.constant([1], tf.uint8))


def test_casts_wrap_like_c():
    ints = tf.constant([-1, 300, 70000])
    assert tf.cast(ints, tf.uint8).numpy().tolist() == [255, 44, 112]
    assert tf.cast(ints, tf.int8).numpy().tolist() == [-1, 44, 112]
    assert tf.cast(ints, tf.uint16).numpy().tolist() == [65535, 300, 4464]
    floats = tf.constant([-1.5, 2.7, 300.0, 1e10], tf.float64)
    assert tf.cast(floats, tf.uint8).numpy().tolist() == [255, 2, 44, 0]
    assert tf.cast(floats, tf.uint32).numpy().tolist() == [2**32 - 1, 2, 300, 1410065408]
    assert tf.cast(tf.constant([-2.0, 2.0**63 + 2048]), tf.uint64).numpy().tolist() == \
        [2**64 - 2, 2**63]  # (float32: 2**63 + 2048 rounds to 2**63)
    assert tf.cast(tf.constant([255], tf.uint8), tf.int8).numpy().tolist() == [-1]
    f = tf.function(lambda t: (tf.cast(t, tf.uint8), tf.cast(t, tf.int16), tf.cast(t, tf.uint64)),
                    backend="numba")
    got = f(floats)
    want = (tf.cast(floats, tf.uint8), tf.cast(floats, tf.int16), tf.cast(floats, tf.uint64))
    for g, w in zip(got, want):
        assert g.dtype is w.dtype and g.numpy().tolist() == w.numpy().tolist()


def test_true_division_follows_tensorflows_table():
    for name, out in [("int8", tf.float32), ("uint16", tf.float32), ("int32", tf.float64),
                      ("uint64", tf.float64)]:
        q = tf.constant([7, 9], name) / tf.constant([2, 3], name)
        assert q.dtype is out and q.numpy().tolist() == [3.5, 3.0]
    with pytest.raises(InvalidArgumentError, match="Integer division by zero|division by zero"):
        tf.math.floordiv(tf.constant([1], tf.uint8), tf.constant([0], tf.uint8))


def test_which_ops_accept_them():
    u = tf.constant([3, 1, 2], tf.uint32)
    assert tf.reduce_sum(u).numpy() == 6 and tf.reduce_max(u).dtype is tf.uint32
    assert tf.argmax(u).numpy() == 0 and tf.sort(u).numpy().tolist() == [1, 2, 3]
    assert tf.reshape(u, [3, 1]).dtype is tf.uint32 and tf.concat([u, u], 0).shape == [6]
    assert tf.matmul(tf.ones([2, 2], tf.int8), tf.ones([2, 2], tf.int8)).dtype is tf.int8
    assert (u > 1).numpy().tolist() == [True, False, True]
    assert tf.abs(tf.constant([-3], tf.int16)).numpy().tolist() == [3]
    # TensorFlow has no negative/abs/sign on unsigned types, and no float math on integers
    for fn, name in [(tf.negative, "negative"), (tf.abs, "abs"), (tf.sign, "sign")]:
        with pytest.raises(InvalidArgumentError,
                           match=f"{name}: 'x' has dtype uint32, which {name} does not support; "
                                 f"supported: int8, int16, int32, int64, float16, bfloat16, "
                                 f"float32, float64"):
            fn(u)
    with pytest.raises(InvalidArgumentError, match="exp: 'x' has dtype int8"):
        tf.exp(tf.constant([1], tf.int8))


def test_bitwise_ops_and_operators():
    a, b = tf.constant([12, -3], tf.int8), tf.constant([10, 5], tf.int8)
    assert (a & b).numpy().tolist() == [8, 5] and (a | b).numpy().tolist() == [14, -3]
    assert (a ^ b).numpy().tolist() == [6, -8] and (~a).numpy().tolist() == [-13, 2]
    assert tf.bitwise.invert(tf.constant([1], tf.uint16)).numpy().tolist() == [65534]
    # shifts: the amount is clamped to [0, bits - 1]; signed right shifts are arithmetic
    x = tf.constant([1, -128, 96], tf.int8)
    assert tf.bitwise.left_shift(x, tf.constant([9, 1, 1], tf.int8)).numpy().tolist() == \
        [-128, 0, -64]
    assert tf.bitwise.right_shift(x, tf.constant([-1, 3, 20], tf.int8)).numpy().tolist() == \
        [1, -16, 0]
    assert tf.bitwise.right_shift(tf.constant([2**63], tf.uint64), 62).numpy().tolist() == [2]
    with pytest.raises(TypeError, match=r"'&' is defined for bool tensors .* and integer"):
        tf.constant([1.0]) & tf.constant([2.0])
    with pytest.raises(InvalidArgumentError, match="bitwise_or: 'x' has dtype float32"):
        tf.bitwise.bitwise_or(tf.constant([1.0]), tf.constant([2.0]))


def test_ir_text_and_serialized_graphs_round_trip():
    @tf.function
    def f(x, y):
        return tf.bitwise.bitwise_xor(x, y) + tf.constant(7, tf.uint16), tf.cast(x, tf.int8)

    x = tf.constant([1, 2, 3], tf.uint16)
    graph = f.get_concrete_function(x, x).graph
    text = print_graph(graph)
    assert "u16[3]" in text and "i8[3]" in text
    assert print_graph(parse(text)) == text
    doc, arrays = serialize.dumps(graph)
    assert print_graph(serialize.loads(doc, arrays)) == text


def test_variables_checkpoints_and_saved_models(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.counts = tf.Variable(np.array([1, 2], np.uint64))
            self.codes = tf.Variable(np.array([-1, 7], np.int8))

        @tf.function(input_signature=[tf.TensorSpec([2], tf.uint8)])
        def bump(self, x):
            self.counts.assign_add(tf.cast(x, tf.uint64))
            return self.codes * tf.cast(x, tf.int8)

    m = M()
    assert m.bump(tf.constant([3, 4], tf.uint8)).numpy().tolist() == [-3, 28]
    prefix = tf.train.Checkpoint(m=m).save(str(tmp_path / "ckpt"))
    m2 = M()
    m2.counts.assign(np.array([0, 0], np.uint64))
    tf.train.Checkpoint(m=m2).restore(prefix)
    assert m2.counts.numpy().tolist() == [4, 6] and m2.counts.dtype is tf.uint64
    assert tf.train.load_checkpoint(prefix).get_variable_to_dtype_map()[
        "m/codes/.ATTRIBUTES/VARIABLE_VALUE"] is tf.int8
    tf.saved_model.save(m, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    out = loaded.bump(tf.constant([1, 1], tf.uint8))
    assert out.dtype is tf.int8 and out.numpy().tolist() == [-1, 7]
    assert loaded.counts.numpy().tolist() == [5, 7] and loaded.counts.dtype is tf.uint64


def test_gradients_skip_integer_tensors():
    x = tf.Variable(tf.constant([1.0, 2.0]))
    with tf.GradientTape() as tape:
        n = tf.constant([2, 3], tf.uint8)
        y = tf.reduce_sum(x * tf.cast(n, tf.float32))
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 3.0]


def test_as_dtype_rejects_what_stagecraft_lacks():
    with pytest.raises(TypeError, match="Supported dtypes are bool, int8"):
        dt.from_numpy(np.dtype(np.longdouble))
