"""TF 2's top-level helpers built from existing primitives: values against NumPy/SciPy
references, eager and inside tf.function, and TF's errors."""
import numpy as np
import pytest
import scipy.linalg

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError


def both(fn, *args, signature=None):
    """fn(*args) eagerly and staged (with an optional input_signature)."""
    staged = tf.function(fn, input_signature=signature)
    return fn(*args), staged(*args)


def test_arithmetic_matches_c_semantics():
    x = np.array([-7, 7, -7, 7, 5], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    for got in both(tf.truncatemod, tf.constant(x), tf.constant(y)):
        assert got.numpy().tolist() == np.fmod(x, y).tolist()
    xf, yf = x.astype(np.float64) + 0.25, y.astype(np.float64)
    for got in both(tf.truncatemod, tf.constant(xf), tf.constant(yf)):
        np.testing.assert_array_equal(got.numpy(), np.fmod(xf, yf))
    assert tf.realdiv(tf.constant([3.0]), 2.0).numpy().tolist() == [1.5]
    with pytest.raises(TypeError, match="floating-point"):
        tf.realdiv(tf.constant([3]), 2)
    assert tf.scalar_mul(2, tf.constant([1.5])).numpy().tolist() == [3.0]
    assert tf.math.scalar_mul is tf.scalar_mul
    with pytest.raises(ValueError, match="only scalar multiply"):
        tf.scalar_mul([1.0, 2.0], tf.constant([1.0, 2.0]))
    assert tf.saturate_cast(tf.constant([300.0, -5.0]), tf.uint8).numpy().tolist() == [255, 0]
    assert float(tf.reduce_logsumexp([0.0, 0.0])) == pytest.approx(np.log(2))


@pytest.mark.parametrize("masks", [
    dict(), dict(begin_mask=1), dict(end_mask=2), dict(shrink_axis_mask=2),
    dict(new_axis_mask=1), dict(ellipsis_mask=2), dict(begin_mask=4, end_mask=4)])
def test_strided_slice_masks_match_numpy(masks):
    x = np.arange(60).reshape(3, 4, 5)
    begin, end, strides = [1, -1, 4], [3, 0, 0], [1, -1, -2]
    key = []
    for i in range(3):
        bit = 1 << i
        if masks.get("ellipsis_mask", 0) & bit:
            key.append(Ellipsis)
        elif masks.get("new_axis_mask", 0) & bit:
            key.append(None)
        elif masks.get("shrink_axis_mask", 0) & bit:
            key.append(begin[i])
        else:
            key.append(slice(None if masks.get("begin_mask", 0) & bit else begin[i],
                             None if masks.get("end_mask", 0) & bit else end[i], strides[i]))
    want = x[tuple(key)]
    for got in both(lambda t: tf.strided_slice(t, begin, end, strides, **masks),
                    tf.constant(x)):
        np.testing.assert_array_equal(got.numpy(), want)


def test_strided_slice_with_run_time_bounds_and_gradient():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def last_two(v):
        n = tf.shape(v)[0]
        return tf.strided_slice(v, tf.stack([n - 2]), tf.stack([n]))
    assert last_two(tf.constant([1.0, 2.0, 3.0])).numpy().tolist() == [2.0, 3.0]
    v = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(tf.strided_slice(v, [0], [3], [2]) * 3.0)
    assert tape.gradient(y, v).numpy().tolist() == [3.0, 0.0, 3.0]


def test_reverse_sequence_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3, 5)).astype(np.float32)  # seq axis 2, batch axis 1
    lengths = np.array([5, 0, 2], np.int64)
    want = x.copy()
    for b, n in enumerate(lengths):
        want[:, b, :n] = x[:, b, :n][..., ::-1]
    for got in both(lambda t: tf.reverse_sequence(t, lengths, seq_axis=2, batch_axis=1),
                    tf.constant(x)):
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(InvalidArgumentError, match="exceeds"):
        tf.reverse_sequence(x, [6, 1, 1], seq_axis=2, batch_axis=1)


def test_ensure_shape_static_and_run_time_checks():
    assert tf.ensure_shape(tf.zeros([2, 3]), [None, 3]).shape == [2, 3]
    with pytest.raises(InvalidArgumentError, match="not compatible"):
        tf.ensure_shape(tf.zeros([2, 3]), [2, 4])
    shapes = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def f(x):
        y = tf.ensure_shape(x, [2, 3])
        shapes.append(y.shape)
        return y * 2.0
    assert f(tf.ones([2, 3])).numpy().sum() == 12.0
    assert shapes == [tf.TensorShape([2, 3])]  # refined while tracing
    with pytest.raises(InvalidArgumentError, match="not compatible"):
        f(tf.ones([5, 3]))
    with pytest.raises(ValueError, match="not compatible"):
        tf.function(lambda x: tf.ensure_shape(x, [4]),
                    input_signature=[tf.TensorSpec([None, 3])])(tf.ones([1, 3]))


def test_broadcast_shapes():
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3])) == [2, 3]
    with pytest.raises(ValueError, match="Incompatible"):
        tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))
    for got in both(tf.broadcast_dynamic_shape, tf.constant([2, 1, 4]), tf.constant([3, 1])):
        assert got.numpy().tolist() == [2, 3, 4]
    with pytest.raises(InvalidArgumentError, match="Incompatible"):
        tf.function(tf.broadcast_dynamic_shape)(tf.constant([2]), tf.constant([3]))
    a, b = tf.shape_n([tf.zeros([1, 2]), tf.zeros([3])], out_type=tf.int64)
    assert a.dtype == tf.int64 and b.numpy().tolist() == [3]


def test_switch_case_and_case_eager_and_staged():
    fns = {0: lambda: tf.constant(10), 1: lambda: tf.constant(20), 2: lambda: tf.constant(30)}
    f = tf.function(lambda i: tf.switch_case(i, fns, default=lambda: tf.constant(-1)))
    for i, want in [(0, 10), (2, 30), (5, -1), (-1, -1)]:
        assert int(f(tf.constant(i))) == want
        assert int(tf.switch_case(tf.constant(i), fns, default=lambda: tf.constant(-1))) == want
    assert int(tf.function(lambda i: tf.switch_case(i, fns))(tf.constant(9))) == 30
    with pytest.raises(ValueError, match="0, 1"):
        tf.switch_case(0, {0: fns[0], 2: fns[2]})

    def pick(x):
        return tf.case([(x < 0, lambda: tf.constant(-1)), (x > 5, lambda: tf.constant(1))],
                       default=lambda: tf.constant(0))
    staged = tf.function(pick)
    for x, want in [(-3, -1), (9, 1), (2, 0)]:
        assert int(pick(tf.constant(x))) == want == int(staged(tf.constant(x)))

    def strict(x):
        return tf.case([(x < 0, lambda: tf.constant(-1)), (x > 5, lambda: tf.constant(1))],
                       exclusive=True)
    with pytest.raises(InvalidArgumentError, match="None of conditions"):
        tf.function(strict)(tf.constant(2))
    with pytest.raises(InvalidArgumentError, match="exclusive"):
        tf.case([(tf.constant(True), lambda: 1), (tf.constant(True), lambda: 2)],
                exclusive=True)


def test_control_dependencies_order_effects_inside_function():
    v = tf.Variable(1.0)
    runs = tf.Variable(0)

    @tf.function
    def f(x):
        with tf.control_dependencies([tf.debugging.Assert(x > 0, ["x must be positive"]),
                                      v.assign_add(x)]):
            runs.assign_add(1)
            return tf.identity(v.read_value())
    assert float(f(tf.constant(2.0))) == 3.0
    with pytest.raises(InvalidArgumentError, match="x must be positive"):
        f(tf.constant(-1.0))
    assert int(runs.numpy()) == 1  # the failing call stopped before the block's effects
    with pytest.raises(TypeError, match="callable"):
        tf.function(lambda: tf.control_dependencies([lambda: None]).__enter__())()
    called = []
    with tf.control_dependencies([lambda: called.append(1)]):  # eagerly, as TF: called
        pass
    assert called == [1]
    with pytest.raises(TypeError, match="list"):
        with tf.control_dependencies(tf.constant(1.0)):
            pass
    assert tf.group(v.assign(0.0)) is None and tf.no_op() is None
    a, b = tf.identity_n([tf.constant(1), tf.constant(2.0)])
    assert int(a) == 1 and float(b) == 2.0
    assert [int(t) for t in tf.tuple([tf.constant(4), tf.constant(5)])] == [4, 5]


def test_introspection_and_timestamp():
    seen = []

    @tf.function
    def f(x):
        seen.append((tf.is_symbolic_tensor(x), tf.inside_function(), tf.is_tensor(x)))
        return tf.timestamp()
    t0 = float(tf.timestamp())
    t1 = float(f(tf.constant(1.0)))
    t2 = float(f(tf.constant(1.0)))  # read at each call, not frozen at trace time
    assert t0 <= t1 <= t2 and seen == [(True, True, True)]
    assert not tf.inside_function() and not tf.is_tensor(np.ones(2))
    assert tf.get_logger().name == "stagecraft"
    assert tf.version.VERSION == tf.__version__


def test_tensor_scatter_nd_max_min():
    t = np.array([[1.0, 5.0], [3.0, 3.0], [0.0, 0.0]], np.float32)
    idx = np.array([[0], [2], [0]])
    upd = np.array([[4.0, 1.0], [-1.0, 2.0], [0.0, 9.0]], np.float32)
    want_max, want_min = t.copy(), t.copy()
    for i, u in zip(idx[:, 0], upd):
        want_max[i] = np.maximum(want_max[i], u)
        want_min[i] = np.minimum(want_min[i], u)
    for got in both(tf.tensor_scatter_nd_max, tf.constant(t), tf.constant(idx),
                    tf.constant(upd)):
        np.testing.assert_array_equal(got.numpy(), want_max)
    np.testing.assert_array_equal(tf.tensor_scatter_nd_min(t, idx, upd).numpy(), want_min)
    run_time_rows = tf.function(tf.tensor_scatter_nd_min, input_signature=[
        tf.TensorSpec([None, 2]), tf.TensorSpec([None, 1], tf.int64), tf.TensorSpec([None, 2])])
    np.testing.assert_array_equal(run_time_rows(t, idx, upd).numpy(), want_min)
    with pytest.raises(InvalidArgumentError, match="outside the shape"):
        tf.function(tf.tensor_scatter_nd_max)(tf.constant(t), tf.constant([[3]]),
                                              tf.constant([[1.0, 1.0]]))


def test_recompute_grad_and_grad_pass_through():
    w = tf.Variable(2.0)
    f = tf.recompute_grad(lambda x: tf.sin(x) * x * w)
    x = tf.constant(0.7)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gw = tape.gradient(y, [x, w])
    assert float(gx) == pytest.approx(2.0 * (np.cos(0.7) * 0.7 + np.sin(0.7)), rel=1e-5)
    assert float(gw) == pytest.approx(np.sin(0.7) * 0.7, rel=1e-5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.grad_pass_through(tf.round)(x * 3.0)
    assert float(tape.gradient(y, x)) == 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sqrtm_matches_scipy_and_differentiates(dtype):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 4, 4)).astype(dtype)
    a = a @ a.transpose(0, 2, 1) + np.eye(4, dtype=dtype)
    b = (rng.normal(size=(4, 4)) + 4 * np.eye(4)).astype(dtype)  # not symmetric
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for m in (a, b):
        want = np.stack([scipy.linalg.sqrtm(x).real for x in m.reshape(-1, 4, 4)])
        for got in both(tf.linalg.sqrtm, tf.constant(m)):
            np.testing.assert_allclose(got.numpy().reshape(-1, 4, 4), want, atol=tol)
    assert tf.matrix_square_root is tf.linalg.sqrtm
    if dtype == np.float64:
        x = tf.constant(b)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.linalg.sqrtm(x) ** 2)
        eps, e = 1e-6, np.zeros((4, 4))
        e[1, 2] = eps
        fd = (np.sum(scipy.linalg.sqrtm(b + e).real ** 2)
              - np.sum(scipy.linalg.sqrtm(b - e).real ** 2)) / (2 * eps)
        assert tape.gradient(y, x).numpy()[1, 2] == pytest.approx(fd, rel=1e-5)


def test_initializers():
    assert tf.zeros_initializer()([2]).numpy().tolist() == [0.0, 0.0]
    assert tf.ones_initializer()([1], tf.int32).numpy().tolist() == [1]
    assert tf.constant_initializer(3)([2]).numpy().tolist() == [3.0, 3.0]
    assert tf.constant_initializer([1, 2, 3, 4])([2, 2]).numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="4 elements"):
        tf.constant_initializer([1, 2, 3, 4])([3])
    init = tf.random_normal_initializer(stddev=2.0, seed=3)
    assert np.array_equal(init([100]).numpy(), init([100]).numpy())
    assert 1.5 < float(tf.math.reduce_std(init([100]))) < 2.5
    u = tf.random_uniform_initializer(-1.0, 1.0)([1000]).numpy()
    assert u.min() >= -1.0 and u.max() < 1.0
    assert "zeros_initializer" in dir(tf)
    assert not hasattr(tf, "Graph") and not hasattr(tf, "gradients")  # graph-mode only


def test_numpy_function_gets_arrays_runs_each_call_and_has_no_gradient():
    calls = []

    def double(a):
        calls.append(type(a))
        return a * 2

    f = tf.function(lambda x: tf.numpy_function(double, [x], tf.float32))
    x = tf.constant([3.0, 1.0])
    assert f(x).numpy().tolist() == [6.0, 2.0] and f(x).numpy().tolist() == [6.0, 2.0]
    assert calls.count(np.ndarray) >= 2  # at every call, on NumPy arrays
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.numpy_function(double, [x], tf.float32) * x)
    assert tape.gradient(y, x).numpy().tolist() == [6.0, 2.0]  # the result counts as constant
