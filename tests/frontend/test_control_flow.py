"""``tf.cond`` and ``tf.while_loop``: eager (plain Python) and staged (graph equations with
traced regions): results, structure/dtype/shape errors, maximum_iterations, shape_invariants,
nesting, variables inside regions, and gradients (first and second order) equal to the eager
tape's on the same function written with Python control flow."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


def _first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


def _ops(fn, *args):
    return [e.op for e in fn.get_concrete_function(*args).graph.eqns]


# ----------------------------------------------------------------------------- cond eager

def test_cond_eager_runs_one_branch():
    x = tf.constant(3.0)
    calls = []

    def t():
        calls.append("t")
        return x * 2.0

    def f():
        calls.append("f")
        return -x

    assert float(tf.cond(x > 0, t, f)) == 6.0
    assert float(tf.cond(x < 0, t, f)) == -3.0
    assert calls == ["t", "f"]


def test_cond_eager_python_pred_and_structures():
    out = tf.cond(True, lambda: {"a": tf.constant(1), "b": None}, lambda: None)
    assert int(out["a"]) == 1 and out["b"] is None


def test_cond_requires_callables():
    with pytest.raises(TypeError):
        tf.cond(tf.constant(True), lambda: 1)
    with pytest.raises(TypeError):
        tf.cond(tf.constant(True), 1, 2)


# ---------------------------------------------------------------------------- cond staged

def test_cond_staged_both_branches_traced_once():
    traced = []

    @tf.function
    def f(x):
        def t():
            traced.append("t")
            return x * 2.0

        def e():
            traced.append("e")
            return x - 1.0
        return tf.cond(x > 0, t, e)

    assert float(f(tf.constant(3.0))) == 6.0
    assert float(f(tf.constant(-3.0))) == -4.0
    assert sorted(traced) == ["e", "t"]
    assert "cond" in _ops(f, tf.constant(1.0))


def test_cond_staged_nested_structure_and_none():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, {"k": x * 2.0, "n": None}),
                       lambda: (-x, {"k": x * 3.0, "n": None}))

    a, d = f(tf.constant(2.0))
    assert float(a) == 2.0 and float(d["k"]) == 4.0 and d["n"] is None
    a, d = f(tf.constant(-2.0))
    assert float(a) == 2.0 and float(d["k"]) == -6.0


def test_cond_staged_python_constant_branch_results():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: 1.0, lambda: 2.0)

    assert float(f(tf.constant(1.0))) == 1.0 and float(f(tf.constant(-1.0))) == 2.0


def test_cond_staged_different_shapes_gives_common_shape():
    @tf.function
    def f(x):
        return tf.cond(x[0] > 0, lambda: x, lambda: tf.concat([x, x], 0))

    c = f.get_concrete_function(tf.TensorSpec([2], tf.float32))
    assert c.outputs[0].shape.as_list() == [None]
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(f(tf.constant([-1.0, 2.0])).numpy(), [-1.0, 2.0, -1.0, 2.0])


def test_cond_staged_structure_mismatch():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError) as e:
        f(tf.constant(1.0))
    assert _first_line(e).startswith("cond: true_fn and false_fn must return the same structure")


def test_cond_staged_none_vs_tensor_mismatch():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, None), lambda: (x, x))

    with pytest.raises(ValueError, match="same structure"):
        f(tf.constant(1.0))


def test_cond_staged_dtype_mismatch_names_output():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: (x, tf.cast(x, tf.int32)))

    with pytest.raises(TypeError) as e:
        f(tf.constant(1.0))
    line = _first_line(e)
    assert line.startswith("cond: output 1 is")
    assert "true_fn" in line and "false_fn" in line


def test_cond_staged_pred_must_be_scalar_bool():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x, lambda: x)

    with pytest.raises(TypeError, match="pred must be a scalar bool"):
        f(tf.constant([1.0, 2.0]))


def test_cond_reads_and_assigns_variable_in_branches():
    v = tf.Variable(10.0)

    @tf.function
    def f(x):
        def t():
            v.assign_add(x)
            return v.read_value()

        def e():
            v.assign(0.0)
            return v * 2.0
        return tf.cond(x > 0, t, e)

    assert float(f(tf.constant(1.0))) == 11.0
    assert float(f(tf.constant(2.0))) == 13.0
    assert float(v) == 13.0
    assert float(f(tf.constant(-1.0))) == 0.0
    assert float(v) == 0.0


def test_cond_only_taken_branch_side_effects(capfd):
    @tf.function
    def f(x):
        def t():
            tf.print("then")
            return x

        def e():
            tf.print("else")
            return x
        return tf.cond(x > 0, t, e)

    f(tf.constant(1.0))
    f(tf.constant(-1.0))
    f(tf.constant(2.0))
    assert capfd.readouterr().err.split() == ["then", "else", "then"]


def test_nested_cond():
    @tf.function
    def f(x, y):
        return tf.cond(x > 0,
                       lambda: tf.cond(y > 0, lambda: x + y, lambda: x - y),
                       lambda: -x)

    assert float(f(tf.constant(1.0), tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(1.0), tf.constant(-2.0))) == 3.0
    assert float(f(tf.constant(-1.0), tf.constant(2.0))) == 1.0


def test_cond_captures_outer_closure_tensors():
    big = tf.ones([40, 40])

    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: tf.reduce_sum(big) * x, lambda: x)

    assert float(f(tf.constant(2.0))) == 3200.0


# -------------------------------------------------------------------------- while eager

def test_while_eager_is_python_loop():
    log = []

    def body(i, s):
        log.append(1)
        return i + 1, s + i

    i, s = tf.while_loop(lambda i, s: i < 4, body, (tf.constant(0), tf.constant(0)))
    assert int(i) == 4 and int(s) == 6 and len(log) == 4


def test_while_eager_single_var_and_maximum_iterations():
    out = tf.while_loop(lambda i: i < 100, lambda i: i + 1, tf.constant(0),
                        maximum_iterations=5)
    assert int(out) == 5


def test_while_eager_wrong_number_of_values():
    with pytest.raises(ValueError, match="body returned"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (tf.constant(0), 1))


def test_while_requires_callables():
    with pytest.raises(TypeError):
        tf.while_loop(1, lambda i: i, (tf.constant(0),))


# ------------------------------------------------------------------------- while staged

def test_while_staged_single_equation():
    traced = []

    @tf.function
    def f(n):
        def body(i, s):
            traced.append(1)
            return i + 1, s + tf.cast(i, tf.float32)
        return tf.while_loop(lambda i, s: i < n, body, (0, 0.0))

    i, s = f(tf.constant(5))
    assert int(i) == 5 and float(s) == 10.0
    i, s = f(tf.constant(0))
    assert int(i) == 0 and float(s) == 0.0
    assert len(traced) <= 2  # the body is traced (at most twice for shape relaxation), not run
    assert _ops(f, tf.constant(1)).count("while") == 1


def test_while_staged_list_loop_vars_keep_type():
    @tf.function
    def f(x):
        return tf.while_loop(lambda a, b: a < 10.0, lambda a, b: [a * 2.0, b + 1], [x, 0])

    out = f(tf.constant(1.0))
    assert isinstance(out, list)
    assert float(out[0]) == 16.0 and int(out[1]) == 4


def test_while_staged_single_loop_var():
    @tf.function
    def f(x):
        return tf.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, x)

    out = f(tf.constant(1.0))
    assert isinstance(out, tf.Tensor) and float(out) == 243.0


def test_while_staged_maximum_iterations():
    @tf.function
    def f(n):
        return tf.while_loop(lambda i: i < 100, lambda i: (i + 1,), (tf.constant(0),),
                             maximum_iterations=n)

    (out,) = f(tf.constant(7))
    assert int(out) == 7
    (out,) = f(tf.constant(0))
    assert int(out) == 0


def test_while_staged_maximum_iterations_cond_stops_first():
    @tf.function
    def f():
        return tf.while_loop(lambda i: i < 3, lambda i: i + 1, tf.constant(0),
                             maximum_iterations=10)

    assert int(f()) == 3


def test_while_staged_shape_invariants():
    @tf.function
    def g(n):
        x = tf.constant([1])
        _, x = tf.while_loop(lambda i, x: i < n,
                             lambda i, x: (i + 1, tf.concat([x, x * 2], 0)),
                             (tf.constant(0), x),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
        return x

    np.testing.assert_array_equal(g(tf.constant(3)).numpy(), [1, 2, 2, 4, 2, 4, 4, 8])


def test_while_staged_shape_change_without_invariant():
    @tf.function
    def g(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 10, lambda x: tf.concat([x, x], 0),
                             (x,))

    with pytest.raises(ValueError) as e:
        g(tf.constant([1]))
    line = _first_line(e)
    assert line.startswith("while_loop: 'loop_vars[0]' enters the loop with shape")
    assert "shape_invariants" in str(e.value)


def test_while_staged_incompatible_shape_invariant():
    @tf.function
    def g(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 10, lambda x: x,
                             (x,), shape_invariants=[tf.TensorShape([3])])

    with pytest.raises(ValueError, match="not compatible with its shape invariant"):
        g(tf.constant([1, 2]))


def test_while_staged_dtype_change_names_variable():
    @tf.function
    def g(x):
        return tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.cast(x, tf.float64)),
                             (0, x))

    with pytest.raises(TypeError) as e:
        g(tf.constant(1.0))
    line = _first_line(e)
    assert line.startswith("while_loop: 'loop_vars[1]' is")
    assert "after one iteration" in line


def test_while_staged_structure_mismatch():
    @tf.function
    def g(x):
        return tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1,), (0, x))

    with pytest.raises(ValueError) as e:
        g(tf.constant(1.0))
    assert _first_line(e).startswith("while_loop: body must return 2 tensors")


def test_while_staged_cond_must_return_bool():
    @tf.function
    def g(x):
        return tf.while_loop(lambda x: x, lambda x: x - 1.0, (x,))

    with pytest.raises(TypeError, match="cond must return one scalar bool"):
        g(tf.constant(3.0))


@pytest.mark.heavy_on_simulator
def test_nested_cond_inside_while():
    @tf.function
    def collatz(n):
        def body(n, steps):
            n = tf.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
            return n, steps + 1
        return tf.while_loop(lambda n, s: n > 1, body, (n, 0))[1]

    assert int(collatz(tf.constant(6))) == 8
    assert int(collatz(tf.constant(27))) == 111
    assert int(collatz(tf.constant(1))) == 0


def test_nested_while_inside_while():
    @tf.function
    def f(n):
        def outer(i, total):
            _, inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + 1), (0, 0))
            return i + 1, total + inner
        return tf.while_loop(lambda i, t: i < n, outer, (0, 0))[1]

    assert int(f(tf.constant(5))) == 10  # 0+1+2+3+4


def test_while_reads_and_assigns_variable():
    v = tf.Variable(0.0)
    counter = tf.Variable(0)

    @tf.function
    def f(n):
        def body(i):
            v.assign_add(tf.cast(i, tf.float32))
            counter.assign_add(1)
            return i + 1
        tf.while_loop(lambda i: i < n, body, (tf.constant(0),))
        return v.read_value()

    assert float(f(tf.constant(4))) == 6.0
    assert int(counter) == 4
    assert float(f(tf.constant(3))) == 9.0
    assert int(counter) == 7


def test_while_condition_reads_variable():
    v = tf.Variable(3)

    @tf.function
    def f():
        return tf.while_loop(lambda i: i < v, lambda i: i + 1, tf.constant(0))

    assert int(f()) == 3
    v.assign(5)
    assert int(f()) == 5


def test_while_print_each_iteration(capfd):
    @tf.function
    def f(n):
        def body(i):
            tf.print("it", i)
            return i + 1
        return tf.while_loop(lambda i: i < n, body, tf.constant(0))

    f(tf.constant(3))
    assert capfd.readouterr().err.splitlines() == ["it 0", "it 1", "it 2"]


# ------------------------------------------------------------------------------ gradients

def _grads(fn, xs, order=1):
    """First (and second) derivatives of the scalar fn(*xs) w.r.t. every x."""
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            y = fn(*xs)
        g = inner.gradient(y, xs)
        s = tf.add_n([tf.reduce_sum(gi) for gi in g if gi is not None])
    if order == 1:
        return y, g
    return y, g, outer.gradient(s, xs)


def _assert_same(a, b):
    for p, q in zip(a, b):
        if p is None or q is None:
            assert p is None and q is None
        else:
            np.testing.assert_allclose(np.asarray(p.numpy(), np.float64),
                                       np.asarray(q.numpy(), np.float64), rtol=1e-6, atol=1e-9)


def _cond_eager(x, y):
    if float(tf.reduce_sum(x)) > 0:
        return tf.reduce_sum(tf.sin(x) * y * x)
    return tf.reduce_sum(tf.exp(x) + y * y)


def _cond_staged(x, y):
    return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.reduce_sum(tf.sin(x) * y * x),
                   lambda: tf.reduce_sum(tf.exp(x) + y * y))


@pytest.mark.parametrize("x", [[0.5, 1.5], [-0.5, -1.5]], ids=["then", "else"])
def test_cond_gradients_match_eager(x):
    xs = [np.array(x), np.array(0.7)]
    staged = tf.function(_cond_staged)
    e = _grads(_cond_eager, xs, order=2)
    s = _grads(staged, xs, order=2)
    np.testing.assert_allclose(s[0].numpy(), e[0].numpy(), rtol=1e-12)
    _assert_same(s[1], e[1])
    _assert_same(s[2], e[2])


def test_cond_gradient_unused_input_in_branch():
    @tf.function
    def f(x, y):
        return tf.cond(x > 0, lambda: x * x, lambda: y * 3.0)

    x, y = tf.constant(2.0), tf.constant(1.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, y])
        out = f(x, y)
    gx, gy = t.gradient(out, [x, y])
    assert float(gx) == 4.0
    assert gy is None or float(gy) == 0.0


def _loop_eager(x, a):
    i, s = 0, x
    while i < 3:
        s = tf.sin(s) * a + s * x
        i += 1
    return tf.reduce_sum(s)


def _loop_staged(x, a):
    _, s = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, tf.sin(s) * a + s * x),
                         (tf.constant(0), x))
    return tf.reduce_sum(s)


@pytest.mark.heavy_on_simulator
def test_while_gradients_match_eager():
    xs = [np.array([0.3, -0.4]), np.array(0.8)]
    staged = tf.function(_loop_staged)
    e = _grads(_loop_eager, xs, order=2)
    s = _grads(staged, xs, order=2)
    np.testing.assert_allclose(s[0].numpy(), e[0].numpy(), rtol=1e-12)
    _assert_same(s[1], e[1])
    _assert_same(s[2], e[2])


@pytest.mark.heavy_on_simulator
def test_while_gradient_data_dependent_trip_count():
    def eager(x):
        s = x
        while float(s) < 10.0:
            s = s * x
        return s

    def staged(x):
        return tf.while_loop(lambda s: s < 10.0, lambda s: s * x, (x,))[0]

    xs = [np.array(1.7)]
    e = _grads(eager, xs, order=2)
    s = _grads(tf.function(staged), xs, order=2)
    np.testing.assert_allclose(s[0].numpy(), e[0].numpy(), rtol=1e-12)
    _assert_same(s[1], e[1])
    _assert_same(s[2], e[2])


def test_while_under_a_tape_counts_its_trips_so_its_gradient_reruns_it_once():
    # The gradient records the iterations in one more forward run and applies the VJPs in a
    # backward loop; the trip count comes from the forward loop itself, not a third loop.
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.while_loop(lambda v: tf.reduce_max(tf.abs(v)) > 0.5,
                              lambda v: (tf.tanh(v) * 0.9,), (x,))[0]
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, x)

    x = tf.constant([1.5, -2.0])
    assert _ops(f, x).count("while") == 3
    y, g = f(x)
    v, d = x.numpy(), np.ones(2)
    while np.max(np.abs(v)) > 0.5:   # the chain rule by hand, iteration by iteration
        d = d * 0.9 * (1 - np.tanh(v) ** 2)
        v = np.tanh(v) * 0.9
    np.testing.assert_allclose(y.numpy(), v, rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 2 * v * d, rtol=1e-5)


def _range_loop_loss(x, w, counter=None):
    def body(t, h):
        if counter is not None:
            counter.assign_add(1.0)
        return t + 1, tf.tanh(h * w + x)

    with tf.GradientTape() as tape:
        tape.watch(w)
        h = tf.while_loop(lambda t, h: t < 5, body, (tf.constant(0), x))[1]
        loss = tf.reduce_sum(h * h)
    return loss, tape.gradient(loss, w)


def test_range_loop_under_one_tape_records_in_its_forward_run():
    # Trip count known on entry (t < 5, t += 1): the forward loop keeps what the gradient
    # reads, so the graph has the forward loop and the backward loop only.
    x, w = tf.constant([0.3, -0.2]), tf.constant(0.7)
    f = tf.function(_range_loop_loss)
    assert _ops(f, x, w).count("while") == 2
    loss, g = f(x, w)
    loss_e, g_e = _range_loop_loss(x, w)
    np.testing.assert_allclose(loss.numpy(), loss_e.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), g_e.numpy(), rtol=1e-6)


@pytest.mark.parametrize("cond, step, start", [
    (lambda t: t <= 4, lambda t: t + 1, 0), (lambda t: t <= 5, lambda t: t + 2, 0),
    (lambda t: t > 0, lambda t: t - 1, 5), (lambda t: t >= 0, lambda t: t + (-2), 5),
    (lambda t: 5 > t, lambda t: t + 1, 0), (lambda t: 0 <= t, lambda t: t - 3, 7),
    (lambda t: t <= 4, lambda t: t + 1, 9)])
@pytest.mark.heavy_on_simulator  # the CPU variant covers every comparison; gpu: --full-matrix
def test_counted_loops_of_every_comparison_record_in_their_forward_run(cond, step, start):
    def loss(x, w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            h = tf.while_loop(lambda t, h: cond(t), lambda t, h: (step(t), tf.tanh(h * w + x)),
                              (tf.constant(start), x))[1]
            total = tf.reduce_sum(h * h)
        return total, tape.gradient(total, w)

    x, w = tf.constant([0.3, -0.2]), tf.constant(0.7)
    f = tf.function(loss)
    assert _ops(f, x, w).count("while") == 2
    got, want = f(x, w), loss(x, w)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    expected = 0.0 if want[1] is None else want[1].numpy()   # no trip: no path to w eagerly
    np.testing.assert_allclose(got[1].numpy(), expected, rtol=1e-6)


def test_range_loop_recorded_in_its_forward_run_keeps_side_effects_once():
    counter = tf.Variable(0.0)
    f = tf.function(lambda x, w: _range_loop_loss(x, w, counter))
    f(tf.constant([0.3, -0.2]), tf.constant(0.7))
    assert counter.numpy() == 5.0


@pytest.mark.heavy_on_simulator
def test_range_loop_second_order_under_nested_tapes():
    # Two tapes: the forward run stays a plain loop and the gradient records a second one,
    # which the outer tape differentiates again.
    def second(x, w):
        with tf.GradientTape() as outer:
            outer.watch(w)
            _, g = _range_loop_loss(x, w)
        return g, outer.gradient(g, w)

    x, w = tf.constant([0.3, -0.2]), tf.constant(0.7)
    g, gg = tf.function(second)(x, w)
    g_e, gg_e = second(x, w)
    np.testing.assert_allclose(g.numpy(), g_e.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gg.numpy(), gg_e.numpy(), rtol=1e-5)


def test_range_loop_of_unknown_rank_under_a_tape_runs_and_its_gradient_says_why_not():
    def doubling(x, gradient):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.while_loop(lambda t, v: t < 3, lambda t, v: (t + 1, v * 2.0),
                              (tf.constant(0), x))[1]
        return tape.gradient(y, x) if gradient else y

    spec = [tf.TensorSpec(None, tf.float32)]
    f = tf.function(lambda x: doubling(x, False), input_signature=spec)
    g = tf.function(lambda x: doubling(x, True), input_signature=spec)
    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [8.0, 16.0])

    with pytest.raises(ValueError) as e:
        g(tf.constant([1.0, 2.0]))
    assert _first_line(e) == ("while_loop gradient: loop variable 1 has an unknown rank; give "
                              "it a shape invariant of known rank to differentiate the loop.")


@pytest.mark.heavy_on_simulator
@pytest.mark.parametrize("start, limit, delta", [(0, 5, 1), (5, 0, -1), (1, 8, 3), (7, -2, -4),
                                                 (3, 3, 1), (4, 2, 1)])
def test_autograph_range_loops_record_in_their_forward_run(start, limit, delta):
    def loss(x, w, start, limit, delta):
        with tf.GradientTape() as tape:
            tape.watch(w)
            h = x
            for i in tf.range(start, limit, delta):
                h = tf.tanh(h * w + tf.cast(i, tf.float32) * 0.1)
            total = tf.reduce_sum(h)
        return total, tape.gradient(total, w)

    x, w = tf.constant([0.3, -0.4]), tf.constant(0.8)
    bounds = [tf.constant(start), tf.constant(limit), tf.constant(delta)]
    f = tf.function(loss)
    assert _ops(f, x, w, *bounds).count("while") == 2
    got, want = f(x, w, *bounds), loss(x, w, start, limit, delta)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    # An empty range: eagerly nothing connects w to the loss (None, as in TF); the staged
    # loop connects them with a zero gradient, as TF's while loop does.
    expected = 0.0 if want[1] is None else want[1].numpy()
    np.testing.assert_allclose(got[1].numpy(), expected, rtol=1e-6)


def test_while_gradient_zero_iterations():
    @tf.function
    def f(x):
        return tf.while_loop(lambda s: s > 100.0, lambda s: s * s, (x,))[0] * 2.0

    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    assert float(t.gradient(y, x)) == 2.0


@pytest.mark.heavy_on_simulator
def test_while_with_maximum_iterations_gradient():
    def staged(x):
        return tf.while_loop(lambda s: s < 1e9, lambda s: s * x, (x,), maximum_iterations=3)[0]

    def eager(x):
        return x * x * x * x

    e = _grads(eager, [np.array(1.3)], order=2)
    s = _grads(tf.function(staged), [np.array(1.3)], order=2)
    _assert_same(s[1], e[1])
    _assert_same(s[2], e[2])


@pytest.mark.heavy_on_simulator
def test_cond_inside_while_gradient():
    def eager(x):
        s = x
        for i in range(4):
            s = s * x if i % 2 == 0 else tf.sin(s)
        return s

    def staged(x):
        def body(i, s):
            return i + 1, tf.cond(i % 2 == 0, lambda: s * x, lambda: tf.sin(s))
        return tf.while_loop(lambda i, s: i < 4, body, (0, x))[1]

    e = _grads(eager, [np.array(0.9)], order=2)
    s = _grads(tf.function(staged), [np.array(0.9)], order=2)
    np.testing.assert_allclose(s[0].numpy(), e[0].numpy(), rtol=1e-12)
    _assert_same(s[1], e[1])
    _assert_same(s[2], e[2])


def test_gradient_wrt_variable_read_in_staged_cond():
    v = tf.Variable(3.0)

    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: v * v * x, lambda: v * x)

    with tf.GradientTape() as t:
        y = f(tf.constant(2.0))
    assert float(t.gradient(y, v)) == 12.0
    with tf.GradientTape() as t:
        y = f(tf.constant(-2.0))
    assert float(t.gradient(y, v)) == -2.0


def test_gradient_wrt_variable_read_in_staged_while():
    v = tf.Variable(1.5)

    @tf.function
    def f(x):
        return tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * v), (0, x))[1]

    with tf.GradientTape() as t:
        y = f(tf.constant(2.0))
    # y = x * v**3 -> dy/dv = 3 x v**2
    np.testing.assert_allclose(float(t.gradient(y, v)), 3 * 2.0 * 1.5 ** 2, rtol=1e-6)


def test_gradient_of_cond_with_tape_inside_function():
    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0, lambda: x * x * x, lambda: -x)
        return t.gradient(y, x)

    assert float(f(tf.constant(2.0))) == 12.0
    assert float(f(tf.constant(-2.0))) == -1.0


def test_eager_cond_and_while_gradients():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.cond(x > 0, lambda: x * x, lambda: x)
        (z,) = tf.while_loop(lambda s: s < 100.0, lambda s: (s * y,), (y,))
    # y = x**2 = 4; z = y**4 = x**8 = 256 -> dz/dx = 8 x**7 = 1024
    assert float(z) == 256.0
    assert float(t.gradient(z, x)) == 1024.0
