"""GradientTape behaviour (semantics.md §1, checklist items 1-36)."""
import logging

import numpy as np
import pytest

import stagecraft as tf
import stagecraft.autodiff.tape as tape_module


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


def val(t):
    assert t is not None
    return np.asarray(t).tolist()


# --------------------------------------------------------------------------- basics (1-6)
def test_watch_constant_square():  # 1
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    g = t.gradient(y, x)
    assert isinstance(g, tf.Tensor)
    assert g.dtype == tf.float32
    assert val(g) == 6.0


def test_unwatched_constant_gives_none():  # 2
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x) is None


def test_trainable_variable_auto_watched():  # 3
    v = tf.Variable(1.0)
    with tf.GradientTape() as t:
        y = v * v
    assert val(t.gradient(y, v)) == 2.0


def test_non_trainable_variable_not_watched():  # 4
    v = tf.Variable(1.0, trainable=False)
    with tf.GradientTape() as t:
        y = v * v
    assert t.gradient(y, v) is None
    assert t.watched_variables() == ()


def test_explicit_watch_of_non_trainable_variable():
    v = tf.Variable(1.0, trainable=False)
    with tf.GradientTape() as t:
        t.watch(v)
        y = v * v
    assert t.watched_variables() == (v,)
    assert val(t.gradient(y, v)) == 2.0


def test_watch_accessed_variables_false():  # 5
    x1 = tf.Variable(1.0)
    x2 = tf.Variable(1.0)
    with tf.GradientTape(watch_accessed_variables=False) as t:
        t.watch(x2)
        y1 = x1 ** 2
        y2 = x2 ** 3
    g1, g2 = t.gradient([y1, y2], [x1, x2])
    assert g1 is None
    assert val(g2) == 3.0
    assert t.watched_variables() == (x2,)


def test_watched_variables_before_and_after_read():  # 6
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        assert t.watched_variables() == ()
        y = v * 1.0
        assert t.watched_variables() == (v,)
    t.gradient(y, v)
    # still reported after a non-persistent gradient
    assert t.watched_variables() == (v,)


def test_watched_variables_creation_order():
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    with tf.GradientTape() as t:
        _ = b * 2.0
        _ = a * 2.0
    assert t.watched_variables() == (a, b)


def test_variable_created_inside_tape_not_watched_until_read():
    with tf.GradientTape() as t:
        v = tf.Variable(1.0)
        assert t.watched_variables() == ()
        y = v + 0.0
        assert t.watched_variables() == (v,)
    assert val(t.gradient(y, v)) == 1.0


# ------------------------------------------------------------ persistence and context (7-11)
def test_second_gradient_on_non_persistent_tape_raises():  # 7
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.gradient(y, x)
    with pytest.raises(RuntimeError) as e:
        t.gradient(y, x)
    assert "non-persistent" in first_line(e)


def test_persistent_tape_multiple_gradients():  # 8
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    assert val(t.gradient(z, x)) == 108.0
    assert val(t.gradient(y, x)) == 6.0
    assert val(t.gradient(z, x)) == 108.0


def test_gradient_inside_non_persistent_block():  # 9
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        g = t.gradient(y, x)
    assert val(g) == 6.0


def test_gradient_inside_non_persistent_block_stops_recording():
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        t.gradient(y, x)
        # the tape is no longer on the stack: a new tape nested here records alone
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = x * y
    assert val(inner.gradient(z, x)) == 9.0
    with pytest.raises(RuntimeError) as e:
        t.gradient(z, x)
    assert "non-persistent" in first_line(e)


def test_gradient_inside_non_persistent_block_later_ops_not_recorded():
    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
            g = t.gradient(y, x)
            w = x * 5.0  # recorded by `outer` only
    assert val(g) == 6.0
    assert val(outer.gradient(w, x)) == 5.0


def test_reenter_active_tape_raises():  # 10
    t = tf.GradientTape()
    with t:
        with pytest.raises(ValueError) as e:
            with t:
                pass
    assert "Tape is still recording" in first_line(e)


def test_reenter_tape_after_exit_continues_recording():  # 11
    x = tf.constant(1.0)
    t = tf.GradientTape()
    with t:
        t.watch(x)
        y = 2.0 * x
    with t:
        z = 2.0 * y
    assert val(t.gradient(z, x)) == 4.0


def test_ops_between_blocks_not_recorded():
    x = tf.constant(1.0)
    t = tf.GradientTape(persistent=True)
    with t:
        t.watch(x)
        y = 2.0 * x
    w = y * 3.0  # outside both blocks
    with t:
        z = 2.0 * w
    assert t.gradient(z, x) is None
    assert val(t.gradient(y, x)) == 2.0


# ------------------------------------------------------------------ structures (12-17)
def test_nested_source_structure():  # 12
    x1, x2, x3 = tf.constant(1.0), tf.constant(1.0), tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch([x1, {"x2": x2, "x3": x3}])
        y = x1 + 2.0 * x2 + 3.0 * x3
    g = t.gradient(y, [x1, {"x2": x2, "x3": x3}])
    assert isinstance(g, list) and len(g) == 2
    assert isinstance(g[1], dict) and sorted(g[1]) == ["x2", "x3"]
    assert val(g[0]) == 1.0
    assert val(g[1]["x2"]) == 2.0
    assert val(g[1]["x3"]) == 3.0


def test_tuple_sources_give_tuple():
    a, b = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as t:
        t.watch((a, b))
        y = a * b
    g = t.gradient(y, (a, b))
    assert isinstance(g, tuple)
    assert [val(x) for x in g] == [5.0, 2.0]


def test_watch_nested_structure_with_tuples_and_dicts():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch({"p": (a,), "q": [b, {"r": c}]})
        y = a * b * c
    ga, gb, gc = t.gradient(y, [a, b, c])
    assert (val(ga), val(gb), val(gc)) == (6.0, 3.0, 2.0)


def test_repeated_sources_each_get_full_gradient():  # 13
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * 2.0
    g = t.gradient(y, [x, x])
    assert [val(a) for a in g] == [2.0, 2.0]


def test_multiple_targets_are_summed():  # 14
    x, y = tf.constant(1.0), tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch([x, y])
        xx = 2.0 * x
        yy = 3.0 * y
    gx, gy = t.gradient([xx, yy], [x, y])
    assert (val(gx), val(gy)) == (2.0, 3.0)


def test_multiple_targets_including_source():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert val(t.gradient([x, y], x)) == 5.0


def test_target_is_source():  # 15
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x
    assert val(t.gradient(y, x)) == 1.0
    assert val(t.gradient([y, y], x)) == 2.0


def test_variable_as_target():
    v = tf.Variable(3.0)
    with tf.GradientTape() as t:
        pass
    assert val(t.gradient(v, v)) == 1.0


def test_non_scalar_target_wrt_itself():  # 16
    x = tf.ones([2, 2])
    with tf.GradientTape() as t:
        t.watch(x)
    g = t.gradient(x, x)
    assert g.shape == (2, 2)
    assert val(g) == [[1.0, 1.0], [1.0, 1.0]]


def test_non_scalar_target_is_reduce_sum():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert val(t.gradient(y, x)) == [2.0, 4.0, 6.0]


def test_output_gradients():  # 17
    x, y = tf.constant(3.0), tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch([x, y])
        xy = x * y
    assert val(t.gradient([xy, x], x, output_gradients=[1.0, 2.0])) == 4.0


def test_output_gradients_with_none_entries_mean_ones():
    x, y = tf.constant(3.0), tf.constant(2.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, y])
        xy = x * y
    assert val(t.gradient([xy, x], x, output_gradients=[None, 5.0])) == 7.0
    assert val(t.gradient([xy, x], x, output_gradients=[3.0, None])) == 7.0


def test_output_gradients_non_scalar_seed():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    g = t.gradient(y, x, output_gradients=tf.constant([10.0, 100.0]))
    assert val(g) == [20.0, 400.0]


# -------------------------------------------------------- unconnected / dtypes (18-23)
def test_unconnected_source_default_none():  # 18
    x, u = tf.constant(3.0), tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch([x, u])
        y = x * x
    gx, gu = t.gradient(y, [x, u])
    assert val(gx) == 6.0
    assert gu is None


def test_unconnected_source_zero():  # 19
    x, u = tf.constant(3.0), tf.zeros([2, 2])
    with tf.GradientTape() as t:
        t.watch([x, u])
        y = x * x
    gx, gu = t.gradient(y, [x, u], unconnected_gradients="zero")
    assert val(gx) == 6.0
    assert gu.shape == (2, 2) and gu.dtype == tf.float32
    assert val(gu) == [[0.0, 0.0], [0.0, 0.0]]


def test_unconnected_zero_enum_for_variable():
    v = tf.Variable([1.0, 2.0, 3.0])
    x = tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * 2.0
    g = t.gradient(y, v, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert g.shape == (3,)
    assert val(g) == [0.0, 0.0, 0.0]


def test_unconnected_none_string_accepted():
    x, u = tf.constant(3.0), tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch([x, u])
        y = x * x
    assert t.gradient(y, u, unconnected_gradients="none") is None


def test_unknown_unconnected_gradients_value():  # 20
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    with pytest.raises(ValueError) as e:
        t.gradient(y, x, unconnected_gradients="nonsense")
    assert "Unknown value for unconnected_gradients" in first_line(e)


def test_watch_ndarray_raises():  # 21
    t = tf.GradientTape()
    with pytest.raises(ValueError) as e:
        t.watch(np.array(1.0))
    assert "ndarray" in first_line(e)
    assert "not tf.Tensor" in first_line(e)


def test_watch_python_float_raises():
    t = tf.GradientTape()
    with pytest.raises(ValueError) as e:
        t.watch(1.0)
    assert "float" in first_line(e)


def test_watch_int_tensor_warns_and_gives_none(caplog, monkeypatch):  # 22
    monkeypatch.setattr(tape_module, "_int_watch_warnings", 0)
    x = tf.constant(2)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        with tf.GradientTape() as t:
            t.watch(x)
            y = x + x
    records = [r for r in caplog.records if r.name == "stagecraft"]
    assert any("must be floating" in r.getMessage() for r in records)
    assert t.gradient(y, x) is None


def test_int_watch_warning_at_most_five_times(caplog, monkeypatch):
    monkeypatch.setattr(tape_module, "_int_watch_warnings", 0)
    x = tf.constant(2)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for _ in range(8):
            with tf.GradientTape() as t:
                t.watch(x)
    hits = [r for r in caplog.records if r.name == "stagecraft" and "must be floating"
            in r.getMessage()]
    assert len(hits) == 5


def test_non_float_targets_and_sources_give_none():  # 23 (strings are not tensors here)
    x = tf.constant([1.0, 2.0])
    i = tf.constant(1)
    b = tf.constant(True)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, i, b])
        y = x * x
        yi = i * 3
    assert t.gradient(y, [i, b]) == [None, None]
    assert t.gradient(yi, i) is None
    assert t.gradient(yi, x) is None
    with pytest.raises(TypeError):
        tf.constant("a string")


# ----------------------------------------------------------------- stop / reset (24-27)
def test_stop_recording():  # 24
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        with t.stop_recording():
            y = x * x
    assert t.gradient(y, x) is None


def test_stop_recording_resumes_afterwards():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        with t.stop_recording():
            c = x * x
        y = x * c
    assert val(t.gradient(y, x)) == 4.0


def test_stop_recording_never_entered():  # 25
    t = tf.GradientTape()
    with pytest.raises(RuntimeError) as e:
        with t.stop_recording():
            pass
    assert "not recording" in first_line(e)


def test_stop_recording_after_exit_or_release():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    with pytest.raises(RuntimeError) as e:
        with t.stop_recording():
            pass
    assert "not recording" in first_line(e)
    with tf.GradientTape() as t2:
        t2.watch(x)
        y = x * x
        t2.gradient(y, x)  # releases the non-persistent tape
        with pytest.raises(RuntimeError):
            with t2.stop_recording():
                pass


def test_reset():  # 26
    v = tf.Variable(1.0)
    with tf.GradientTape() as t:
        loss = v * v
        t.reset()
        loss += v * v
    assert val(t.gradient(loss, v)) == 2.0


def test_reset_clears_watched():
    x = tf.constant(1.0)
    v = tf.Variable(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        _ = v * 1.0
        assert t.watched_variables() == (v,)
        t.reset()
        assert t.watched_variables() == ()
        y = x * 3.0
    assert t.gradient(y, x) is None


def test_reset_outside_context():  # 27
    t = tf.GradientTape()
    with pytest.raises(ValueError) as e:
        t.reset()
    assert "not recording" in first_line(e)


# ---------------------------------------------------------------- higher order (28-30)
def test_nested_tapes_second_derivative():  # 28
    x = tf.constant(5.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy = inner.gradient(y, x)
    assert val(dy) == 10.0
    assert val(outer.gradient(dy, x)) == 2.0


def test_persistent_tape_higher_order_inside_block():  # 29
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x * x
        dy = t.gradient(y, x)
        d2 = t.gradient(dy, x)
    d3 = t.gradient(d2, x)
    assert (val(y), val(dy), val(d2), val(d3)) == (27.0, 27.0, 18.0, 6.0)


def test_persistent_tape_third_derivative_of_cube():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x ** 3
        d1 = t.gradient(y, x)
        d2 = t.gradient(d1, x)
        d3 = t.gradient(d2, x)
    assert (val(y), val(d1), val(d2), val(d3)) == (27.0, 27.0, 18.0, 6.0)


def test_persistent_gradient_inside_block_warns_once(caplog):
    x = tf.constant(3.0)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            t.gradient(y, x)
            t.gradient(y, x)
    hits = [r for r in caplog.records if r.name == "stagecraft" and "persistent" in
            r.getMessage()]
    assert len(hits) == 1


def test_watching_is_tape_local():  # 30
    x1 = tf.Variable(2.0, trainable=False)
    x2 = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape1:
        with tf.GradientTape() as tape2:
            tape1.watch(x1)
            tape2.watch([x1, x2])
            y = x1 ** 3
            z = x2 ** 2
            dy, dz = tape2.gradient([y, z], [x1, x2])
        d2y, d2z = tape1.gradient([dy, dz], [x1, x2])
    assert val(dy) == 12.0 and val(dz) == 4.0
    assert val(d2y) == 12.0
    assert d2z is None


def test_inner_watch_does_not_leak_outward():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x
    assert val(inner.gradient(y, x)) == 4.0
    assert outer.gradient(y, x) is None


# -------------------------------------------------------- control flow / ints (31-33)
def test_python_if_on_eager_value():  # 31
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x if x < x else x * x
    assert val(t.gradient(y, x)) == 6.0


def test_python_max_over_variables():  # 32
    v2, v3, v5 = tf.Variable(2.0), tf.Variable(3.0), tf.Variable(5.0)
    with tf.GradientTape() as t:
        m = max([v2, v3, v5])
    g = t.gradient(m, [v2, v3, v5])
    assert g[0] is None and g[1] is None
    assert val(g[2]) == 1.0


def test_python_for_loop_only_executed_ops_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.constant(1.0)
        for _ in range(3):
            y = y * x
    assert val(t.gradient(y, x)) == 12.0


def test_int_output_and_argmax_give_none():  # 33
    x = tf.constant([1.0, 3.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        am = tf.argmax(x)
        as_int = tf.cast(x, tf.int32)
        through_int = tf.cast(as_int, tf.float32) * 2.0
    assert t.gradient(am, x) is None
    assert t.gradient(as_int, x) is None
    assert t.gradient(through_int, x) is None


# ------------------------------------------------------------------ jacobians (34-36)
def test_jacobian():  # 34
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    j = t.jacobian(y, x)
    assert j.shape == (2, 2)
    assert val(j) == [[2.0, 0.0], [0.0, 4.0]]


def test_jacobian_shape_and_structure():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    u = tf.constant(1.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, u])
        y = tf.reduce_sum(x * x, axis=1)  # shape [2]
    j = t.jacobian(y, {"x": x, "u": u})
    assert sorted(j) == ["u", "x"]
    assert j["u"] is None
    assert j["x"].shape == (2, 2, 2)
    assert val(j["x"]) == [[[2.0, 4.0], [0.0, 0.0]], [[0.0, 0.0], [6.0, 8.0]]]
    jz = t.jacobian(y, [u], unconnected_gradients="zero")
    assert jz[0].shape == (2,)
    assert val(jz[0]) == [0.0, 0.0]


def test_jacobian_consumes_non_persistent_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.jacobian(y, x)
    with pytest.raises(RuntimeError) as e:
        t.jacobian(y, x)
    assert "non-persistent" in first_line(e)
    with pytest.raises(RuntimeError) as e:
        t.gradient(y, x)
    assert "non-persistent" in first_line(e)


def test_jacobian_without_pfor_needs_persistent():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    with pytest.raises(RuntimeError) as e:
        t.jacobian(y, x, experimental_use_pfor=False)
    assert "persistent=True" in first_line(e)


def test_jacobian_without_pfor_on_persistent_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    j = t.jacobian(y, x, experimental_use_pfor=False)
    assert val(j) == [[2.0, 0.0], [0.0, 4.0]]


def test_batch_jacobian():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x * tf.constant([[3.0, 4.0], [5.0, 6.0]])
    j = t.batch_jacobian(y, x)
    assert j.shape == (2, 2, 2)
    assert val(j) == [[[6.0, 0.0], [0.0, 16.0]], [[30.0, 0.0], [0.0, 48.0]]]


def test_batch_jacobian_unconnected_gives_zeros():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    other = tf.constant([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    with tf.GradientTape() as t:
        t.watch([x, other])
        y = other * 2.0
    j = t.batch_jacobian(y, x)
    assert j.shape == (2, 3, 2)
    assert np.count_nonzero(np.asarray(j)) == 0


def test_batch_jacobian_rank_one_target():  # 35
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x, axis=1)
    with pytest.raises(ValueError) as e:
        t.batch_jacobian(y, x)
    assert "rank at least 2" in first_line(e)


def test_batch_jacobian_mismatched_batch():  # 36
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.ones([3, 2]) * 2.0
    with pytest.raises(ValueError) as e:
        t.batch_jacobian(y, x)
    assert "Need first dimension" in first_line(e)


# ----------------------------------------------------------------------- custom_gradient
def test_custom_gradient_basic():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1.0 - 1.0 / (1.0 + e))
        return tf.math.log(1.0 + e), grad

    x = tf.constant(0.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = log1pexp(x)
    assert val(y) == pytest.approx(np.log(2.0))
    assert val(t.gradient(y, x)) == pytest.approx(0.5)


def test_custom_gradient_overrides_true_gradient():
    @tf.custom_gradient
    def clip_grad(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = clip_grad(x) * 10.0
    assert val(t.gradient(y, x)) == 1.0


def test_custom_gradient_second_order_under_nested_tapes():
    @tf.custom_gradient
    def square(x):
        def grad(dy):
            return dy * 2.0 * x
        return x * x, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = square(x)
        g = inner.gradient(y, x)
    assert val(y) == 9.0
    assert val(g) == 6.0
    assert val(outer.gradient(g, x)) == 2.0


def test_custom_gradient_with_variable():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def scale(x):
        def grad(dy, variables=None):
            assert variables is not None and len(variables) == 1 and variables[0] is v
            return dy * v, [dy * x * 10.0]
        return x * v, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = scale(x)
    gx, gv = t.gradient(y, [x, v])
    assert val(y) == 6.0
    assert val(gx) == 2.0
    assert val(gv) == 30.0


def test_custom_gradient_reading_variable_needs_variables_kwarg():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def scale(x):
        return x * v, lambda dy: dy * v

    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(TypeError) as e:
            scale(x)
    assert "variables" in first_line(e)


# ------------------------------------------------------- "gradient is None" causes (§1.9)
def test_none_cause_constant_not_watched():  # (1)
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x) is None


def test_none_cause_computed_outside_block():  # (2)
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
    y = x * x
    assert t.gradient(y, x) is None


def test_none_cause_numpy_round_trip():  # (3)
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.constant(x.numpy()) * 2.0
        z = tf.constant(float(x)) * 2.0
    assert t.gradient(y, x) is None
    assert t.gradient(z, x) is None


def test_none_cause_integer_dtype():  # (4)
    x = tf.constant(2)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert t.gradient(y, x) is None


def test_none_cause_non_differentiable_op():  # (5)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.stop_gradient(x) * 3.0
        z = tf.stop_gradient(x) * x
    assert t.gradient(y, x) is None
    assert val(t.gradient(z, x)) == [1.0, 2.0]


def test_none_cause_variable_replaced_by_tensor():  # (6)
    v = tf.Variable(1.0)
    v_old = v
    v = v + 1.0  # now a Tensor, created outside any tape
    assert isinstance(v, tf.Tensor) and not isinstance(v, tf.Variable)
    with tf.GradientTape() as t:
        y = v * v
    assert t.gradient(y, v) is None
    # differentiating w.r.t. the old variable still works when it is read under the tape
    with tf.GradientTape() as t:
        w = v_old + 1.0
        y = w * w
    assert val(t.gradient(y, v_old)) == 4.0


def test_none_cause_variable_read_under_stop_recording():  # (7)
    v = tf.Variable(3.0)
    with tf.GradientTape() as t:
        with t.stop_recording():
            y = v * v
    assert t.gradient(y, v) is None


def test_none_cause_watch_accessed_variables_false():  # (7)
    v = tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as t:
        y = v * v
    assert t.gradient(y, v) is None
    assert t.watched_variables() == ()


def test_none_cause_second_call_raises():  # (8)
    v = tf.Variable(3.0)
    with tf.GradientTape() as t:
        y = v * v
    assert val(t.gradient(y, v)) == 6.0
    with pytest.raises(RuntimeError, match="non-persistent"):
        t.gradient(y, v)


def test_the_seed_of_a_target_is_not_recorded_by_other_tapes():
    """The ones a gradient starts from are no op of the program: an outer tape (or a
    persistent tape asked inside its block) must not record them, nor the read of a variable
    target (TensorFlow: the second-order gradient of a variable by itself is None)."""
    v = tf.Variable(3.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            pass
        first = inner.gradient(v, v)
    assert float(first) == 1.0 and outer.gradient(first, v) is None
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
        recorded = len(tape._records)
        tape.gradient(y, x)
        assert len(tape._records) == recorded + 1   # (the multiply's gradient op, no seed)
