"""Segment reductions, bincount, unique and searchsorted against NumPy references: eagerly,
staged on the reference interpreter and on Numba (all cases in one function, one compile;
Numba with --full-matrix),
gradients against central finite differences, and TensorFlow's errors and empty-segment
values. One table drives the value and gradient checks."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError

rng = np.random.default_rng(11)
D = rng.normal(size=(6, 2))
D[4, 1] = 0.0                      # a zero in a product segment
U = [2, 0, 1, -1, 0, 2]            # unsorted ids; -1 drops row 3
S = [0, 0, 1, 3, 3, 3]             # sorted ids; segment 2 empty
F32_LOW = float(np.finfo(np.float64).min)


def _seg_ref(data, ids, n, ufunc, empty):
    out = np.full((n,) + data.shape[1:], float(empty))
    hit = np.zeros(n, bool)
    for row, s in zip(data, ids):
        if s >= 0:
            out[s] = row if not hit[s] else ufunc(out[s], row)
            hit[s] = True
    return out, hit


def _ref(ufunc, ids, n, empty, sorted_empty=None):
    def ref(x):
        out, hit = _seg_ref(x, ids, n, ufunc, empty)
        if sorted_empty is not None:
            out[~hit] = sorted_empty
        return out
    return ref


def _mean_ref(ids, n, root=False):
    def ref(x):
        total, _ = _seg_ref(x, ids, n, np.add, 0.0)
        counts = np.maximum(np.bincount([i for i in ids if i >= 0], minlength=n), 1)
        return total / (np.sqrt(counts) if root else counts)[:, None]
    return ref


# name: (stagecraft function of one float64 tensor, NumPy reference, differentiable)
CASES = {
    "unsorted_sum": (lambda x: tf.math.unsorted_segment_sum(x, U, 4),
                     _ref(np.add, U, 4, 0.0), True),
    "unsorted_prod": (lambda x: tf.math.unsorted_segment_prod(x, U, 4),
                      _ref(np.multiply, U, 4, 1.0), True),
    "unsorted_max": (lambda x: tf.math.unsorted_segment_max(x, U, 3),
                     _ref(np.maximum, U, 3, F32_LOW), True),
    "unsorted_min": (lambda x: tf.math.unsorted_segment_min(x, U, 3),
                     _ref(np.minimum, U, 3, -F32_LOW), True),
    "unsorted_max_empty": (lambda x: tf.math.unsorted_segment_max(x, U, 5),
                           _ref(np.maximum, U, 5, F32_LOW), False),
    "unsorted_mean": (lambda x: tf.math.unsorted_segment_mean(x, U, 4), _mean_ref(U, 4), True),
    "unsorted_sqrt_n": (lambda x: tf.math.unsorted_segment_sqrt_n(x, U, 4),
                        _mean_ref(U, 4, root=True), True),
    "unsorted_2d_ids": (lambda x: tf.math.unsorted_segment_sum(
        tf.reshape(x, [2, 3, 2]), [[0, 1, 0], [2, 2, -1]], 3),
        lambda x: _ref(np.add, [0, 1, 0, 2, 2, -1], 3, 0.0)(x), True),
    "segment_sum": (lambda x: tf.math.segment_sum(x, S), _ref(np.add, S, 4, 0.0), True),
    "segment_prod": (lambda x: tf.math.segment_prod(x, S), _ref(np.multiply, S, 4, 1.0),
                     True),
    "segment_max": (lambda x: tf.math.segment_max(x, S), _ref(np.maximum, S, 4, 0.0, 0.0),
                    True),
    "segment_min": (lambda x: tf.math.segment_min(x, S), _ref(np.minimum, S, 4, 0.0, 0.0),
                    True),
    "segment_mean": (lambda x: tf.math.segment_mean(x, S), _mean_ref(S, 4), True),
    "bincount_weights": (lambda x: tf.math.bincount([3, 1, 3, 0, 5, 1], weights=x[:, 0],
                                                    maxlength=4),
                         lambda x: np.bincount([3, 1, 3, 0, 1], np.delete(x[:, 0], 4)), True),
    "unique_values": (lambda x: tf.unique(tf.round(x[:, 0] * 0.0 + [3., 1., 3., 2., 1., 3.]))[0]
                      + x[0, 0], lambda x: np.array([3., 1., 2.]) + x[0, 0], True),
    "searchsorted": (lambda x: tf.cast(tf.searchsorted(tf.sort(x[:, 0]), x[:3, 1] * 0 +
                                                       [-0.5, 0.0, 0.5]), tf.float64),
                     lambda x: np.searchsorted(np.sort(x[:, 0]), [-0.5, 0.0, 0.5]).astype(float),
                     False),
}


def _all(x):
    return [fn(x) for fn, _, _ in CASES.values()]


# Numba: the primitives are checked against the reference by the generated tests and the
# staged unique and errors below; the whole table compiled on Numba runs with --full-matrix.
@pytest.mark.parametrize("how", ["eager", "reference",
                                 pytest.param("numba", marks=pytest.mark.full_matrix)])
def test_values_match_numpy(how):
    run = _all if how == "eager" else tf.function(_all, backend=how)
    for (name, (_, ref, _)), got in zip(CASES.items(), run(tf.constant(D))):
        np.testing.assert_allclose(got.numpy(), ref(D), rtol=1e-12, atol=0, err_msg=name)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_gradients_match_finite_differences(name):
    fn = CASES[name][0]
    weights = rng.normal(size=np.shape(CASES[name][1](D)))
    x = tf.Variable(D)
    with tf.GradientTape() as tape:
        value = tf.reduce_sum(fn(x) * weights)
    grad = tape.gradient(value, x).numpy()
    numeric = np.zeros_like(D)
    for idx in np.ndindex(D.shape):
        for sign in (1, -1):
            moved = D.copy()
            moved[idx] += sign * 1e-6
            numeric[idx] += sign * float(tf.reduce_sum(fn(tf.constant(moved)) * weights))
    np.testing.assert_allclose(grad, numeric / 2e-6, rtol=1e-5, atol=1e-7)


def test_max_gradient_is_split_among_ties():
    x = tf.Variable([1.0, 3.0, 3.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.math.unsorted_segment_max(x, [0, 0, 0, 1], 2))
    assert tape.gradient(y, x).numpy().tolist() == [0.0, 0.5, 0.5, 1.0]


def test_empty_segments_hold_tensorflows_values():
    x = tf.constant([[1.0, 2.0]])
    assert tf.math.unsorted_segment_max(x, [1], 2).numpy()[0].tolist() == [
        float(np.finfo(np.float32).min)] * 2
    assert tf.math.unsorted_segment_min(tf.constant([4], tf.int64), [1], 2).numpy()[0] == \
        np.iinfo(np.int64).max
    assert tf.math.unsorted_segment_prod(x, [1], 2).numpy()[0].tolist() == [1.0, 1.0]
    assert tf.math.unsorted_segment_mean(x, [1], 2).numpy()[0].tolist() == [0.0, 0.0]
    assert tf.math.segment_min(x, [1]).numpy()[0].tolist() == [0.0, 0.0]
    assert tf.math.segment_sum(tf.zeros([0, 2]), tf.zeros([0], tf.int32)).shape == [0, 2]


def test_unique_orders_by_first_occurrence_with_dynamic_size_when_staged():
    def f(x):
        u = tf.unique_with_counts(x, out_idx=tf.int64)
        return u.y, u.idx, u.count

    x = tf.constant([4.0, 2.0, 4.0, -0.0, 0.0, 7.0, 2.0])
    expect = ([4.0, 2.0, 0.0, 7.0], [0, 1, 0, 2, 2, 3, 1], [2, 2, 2, 1])
    for run in (f, tf.function(f, backend="reference"), tf.function(f, backend="numba")):
        y, idx, count = run(x)
        assert (y.numpy().tolist(), idx.numpy().tolist(), count.numpy().tolist()) == expect
        assert idx.dtype == tf.int64 and count.dtype == tf.int64
    spec = tf.function(f, backend="numba").get_concrete_function(
        tf.TensorSpec([None], tf.float32))
    assert spec.structured_outputs[0].shape.as_list() == [None]
    assert [t.numpy().tolist() for t in spec(tf.constant([1.0, 1.0]))] == [[1.0], [0, 0], [2]]
    y, idx = tf.unique(tf.constant([], tf.int32))
    assert y.shape == [0] and idx.dtype == tf.int32


def test_searchsorted_sides_rows_and_out_type():
    seq = tf.constant([[1, 3, 3, 7], [0, 0, 5, 9]])
    vals = tf.constant([[3, 8], [0, 10]])
    left = tf.searchsorted(seq, vals)
    right = tf.searchsorted(seq, vals, side="right", out_type=tf.int64)
    assert left.numpy().tolist() == [[1, 4], [0, 4]] and left.dtype == tf.int32
    assert right.numpy().tolist() == [[3, 4], [2, 4]] and right.dtype == tf.int64


def test_bincount_arguments():
    assert tf.math.bincount([1, 1, 3], minlength=5).numpy().tolist() == [0, 2, 0, 1, 0]
    assert tf.math.bincount([1, 1, 3], maxlength=2, dtype=tf.float32).numpy().tolist() == \
        [0.0, 2.0]
    assert tf.math.bincount([1, 1, 3], binary_output=True).numpy().tolist() == [0, 1, 0, 1]
    assert tf.math.bincount([[1, 0], [2, 2]], axis=-1).numpy().tolist() == [[1, 1, 0],
                                                                              [0, 0, 2]]
    assert tf.math.bincount(tf.zeros([0], tf.int32)).shape == [0]


def _first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


@pytest.mark.parametrize("backend", [None, "numba"])
def test_bad_segment_ids_raise_tensorflows_errors(backend):
    def call(fn, *args):
        return fn(*args) if backend is None else tf.function(fn, backend=backend)(*args)

    data = tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgumentError) as e:
        call(lambda d, i: tf.math.unsorted_segment_sum(d, i, 2), data, tf.constant([0, 2, 1]))
    assert _first_line(e).endswith("segment_ids[1] = 2 is out of range [0, 2)")
    with pytest.raises(InvalidArgumentError, match="segment ids are not increasing"):
        call(tf.math.segment_sum, data, tf.constant([0, 2, 1]))
    with pytest.raises(InvalidArgumentError, match="segment ids must be >= 0"):
        call(tf.math.segment_max, data, tf.constant([-1, 0, 1]))
    with pytest.raises(InvalidArgumentError, match="Input arr must be non-negative"):
        call(tf.math.bincount, tf.constant([1, -1]))


def test_bad_shapes_and_arguments_are_explained():
    with pytest.raises(InvalidArgumentError) as e:
        tf.math.unsorted_segment_sum(tf.zeros([3, 2]), [0, 1], 2)
    assert "does not start with segment_ids.shape" in _first_line(e)
    with pytest.raises(InvalidArgumentError, match="x must be a vector"):
        tf.unique(tf.zeros([2, 2]))
    with pytest.raises(InvalidArgumentError, match="Leading dim_size of both tensors must match"):
        tf.searchsorted(tf.zeros([2, 3]), tf.zeros([3, 1]))
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        tf.searchsorted([1.0], [1.0], side="middle")
    with pytest.raises(TypeError, match="segment_ids must be int32 or int64"):
        tf.math.segment_sum([1.0], [0.0])
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.math.bincount([1], weights=[1.0], binary_output=True)
