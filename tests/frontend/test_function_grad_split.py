"""The gradient of a staged call split into a forward-with-residuals and a backward graph
(``stagecraft.staging.function_grad``): gradients equal the rematerializing path's and finite
differences, side effects happen once per call, and the backward graph does not compute the
forward again."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.staging.function_grad import rematerializing

X = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]], np.float32)
W1 = np.array([[0.2, -0.4, 0.1, 0.3], [0.5, 0.2, -0.3, 0.1], [-0.2, 0.6, 0.4, -0.1]],
              np.float32)
W2 = np.array([[0.3], [-0.2], [0.5], [0.1]], np.float32)


def _grads(f, args, sources=None, remat=False):
    """Outputs of ``f(*args)`` and the gradient of the sum of its float outputs with respect
    to ``sources`` (default: the arguments)."""
    args = [tf.constant(a) for a in args]
    sources = args if sources is None else sources

    def run():
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = f(*args)
            flat = out if isinstance(out, (list, tuple)) else [out]
            loss = tf.add_n([tf.reduce_sum(o) for o in flat if o.dtype.is_floating])
        return flat, tape.gradient(loss, sources)

    if remat:
        with rematerializing():
            return run()
    return run()


def _close(a, b):
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


def _matmuls(graph) -> int:
    from stagecraft.ir.graph import walk_eqns
    return sum(e.op == "matmul" for e in walk_eqns(graph))


def _split(f, *args):
    return f.get_concrete_function(*args)._split


def test_mlp_gradients_equal_rematerializing_and_finite_differences():
    w1, w2 = tf.Variable(W1), tf.Variable(W2)

    @tf.function
    def mlp(x):
        h = tf.nn.relu(tf.matmul(x, w1))
        return tf.tanh(tf.matmul(h, w2)), tf.argmax(h, axis=1)  # a float and an int output

    outs, grads = _grads(mlp, [X], sources=None)
    outs_r, grads_r = _grads(mlp, [X], remat=True)
    _close([o.numpy() for o in outs], [o.numpy() for o in outs_r])
    _close([g.numpy() for g in grads], [g.numpy() for g in grads_r])

    def loss(x):
        return float(np.sum(np.tanh(np.maximum(x @ W1, 0) @ W2)))
    eps, numeric = 1e-3, np.zeros_like(X, np.float64)
    for i in np.ndindex(X.shape):
        d = np.zeros_like(X)
        d[i] = eps
        numeric[i] = (loss(X + d) - loss(X - d)) / (2 * eps)
    np.testing.assert_allclose(grads[0].numpy(), numeric, rtol=2e-2, atol=2e-3)


def test_backward_graph_does_not_recompute_the_forward():
    w1, w2 = tf.Variable(W1), tf.Variable(W2)

    @tf.function
    def mlp(x):
        return tf.reduce_sum(tf.tanh(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)))

    x = tf.constant(X)
    _grads(mlp, [X])
    split = _split(mlp, x)
    assert _matmuls(split.forward.graph) == 2
    # d/dx and d/dw of each of the two products, nothing of the forward
    assert _matmuls(split.backward.graph) == 4
    with rematerializing():
        _grads(mlp, [X])
    remat_backward = mlp.get_concrete_function(x)._backward[0]
    assert _matmuls(remat_backward.graph) == 6  # what the split saves: the forward's two


def test_forward_runs_once_per_training_step():
    """A py_function counter in the forward: the split runs it once per call; the
    rematerializing backward ran it again."""
    calls = []
    w = tf.Variable(W1)

    def count(x):
        calls.append(1)
        return x

    @tf.function
    def f(x):
        h = tf.matmul(x, w)
        tf.py_function(count, [h], tf.float32)
        return tf.reduce_sum(tf.sin(h))

    x = tf.constant(X)
    with tf.GradientTape() as tape:
        y = f(x)
    tape.gradient(y, w)
    assert len(calls) == 1
    with rematerializing(), tf.GradientTape() as tape:
        y = f(x)
    tape.gradient(y, w)
    assert len(calls) == 3


def test_variable_writes_and_prints_happen_once(capfd):
    v = tf.Variable(2.0)
    steps = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def g(x):
        v.assign_add(1.0)
        steps.assign_add(1)
        tf.print("called")
        return x * v

    x = tf.constant(3.0)
    for n in (1, 2):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        dx, dv = tape.gradient(y, [x, v])
        assert (float(y), float(dx), float(dv)) == (3.0 * (2.0 + n), 2.0 + n, 3.0)
        assert (float(v), int(steps)) == (2.0 + n, n)
    assert capfd.readouterr().err.count("called") == 2


def test_random_draws_consume_the_state_once_and_match_the_gradient():
    @tf.function
    def dropout(x):
        mask = tf.cast(tf.random.uniform(tf.shape(x), seed=7) < 0.5, tf.float32)
        return x * mask * 3.0

    x = tf.constant(np.ones((4, 5), np.float32))
    tf.random.set_seed(1)
    plain = [dropout(x).numpy() for _ in range(2)]
    tf.random.set_seed(1)
    for expected in plain:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = dropout(x)
        np.testing.assert_array_equal(y.numpy(), expected)  # the same draws as the plain calls
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), expected)


def test_two_calls_before_one_gradient_keep_their_own_residuals():
    @tf.function
    def f(x):
        return tf.exp(x) * x

    a, b = tf.constant([0.5, -1.0]), tf.constant([2.0, 0.1])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.reduce_sum(f(a)) + tf.reduce_sum(f(b) * 2.0)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), np.exp(a.numpy()) * (1 + a.numpy()), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), 2 * np.exp(b.numpy()) * (1 + b.numpy()), rtol=1e-6)


def test_unconnected_inputs_and_outputs_without_gradients():
    @tf.function
    def f(x, unused, n):
        return x * x, tf.cast(n, tf.float32) + 1.0, n * 2

    x, u, n = tf.constant(3.0), tf.constant(1.0), tf.constant(4)
    for remat in (False, True):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, u])
            if remat:
                with rematerializing():
                    a, b, c = f(x, u, n)
            else:
                a, b, c = f(x, u, n)
        assert tape.gradient(a, [x, u])[1] is None
        assert float(tape.gradient(a, x)) == 6.0
        gx, gu = tape.gradient(b, [x, u])  # x is connected to the call, not to b: zeros
        assert (float(gx), gu, int(c)) == (0.0, None, 8)


def test_inference_calls_build_no_split():
    @tf.function
    def f(x):
        return tf.sin(x)

    x = tf.constant(1.0)
    f(x)
    with tf.GradientTape():
        f(x)  # a tape that watches nothing of the call
    assert f.get_concrete_function(x)._split is None


@pytest.mark.parametrize("persistent", [False, True])
def test_second_derivatives_through_the_residuals(persistent):
    @tf.function
    def f(x):
        return tf.sin(x) * x

    x = tf.constant([0.4, 1.3])
    if persistent:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
            dy = tape.gradient(y, x)
        d2y = tape.gradient(dy, x)
    else:
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            dy = inner.gradient(y, x)
        d2y = outer.gradient(dy, x)
    v = x.numpy()
    np.testing.assert_allclose(dy.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-5)
    np.testing.assert_allclose(d2y.numpy(), 2 * np.cos(v) - np.sin(v) * v, rtol=1e-5)


def test_staged_call_inside_a_staged_training_step():
    w = tf.Variable(W1)

    @tf.function
    def forward(x):
        return tf.reduce_sum(tf.tanh(tf.matmul(x, w)))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            y = forward(x)
        return tape.gradient(y, w)

    x = tf.constant(X)
    g = step(x)
    expected = X.T @ (1 - np.tanh(X @ W1) ** 2)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5)
    split = _split(forward, x)
    assert _matmuls(split.backward.graph) == 2  # d/dx and d/dw, not the forward product


def test_cond_and_while_in_the_forward():
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            x = tf.sin(x) * x
        else:
            x = x * 2.0
        i = tf.constant(0)
        while i < 3:
            x = tf.tanh(x) + x
            i += 1
        return x

    for v in ([0.5, 0.2], [-0.5, 0.2]):
        _, grads = _grads(f, [np.array(v, np.float32)])
        _, grads_r = _grads(f, [np.array(v, np.float32)], remat=True)
        _close([grads[0].numpy()], [grads_r[0].numpy()])


def test_custom_gradient_inside_a_staged_function():
    @tf.custom_gradient
    def clip(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.5, 0.5)

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = clip(x) * 3.0
        return tape.gradient(y, x) * x

    x = np.array([1.0, -2.0], np.float32)
    _, grads = _grads(f, [x])
    _, grads_r = _grads(f, [x], remat=True)
    _close([grads[0].numpy()], [grads_r[0].numpy()])
    np.testing.assert_allclose(grads[0].numpy(), [0.5, 0.5])


def test_a_refused_split_says_why_and_rematerializes(caplog):
    """Random numbers in a cond branch are redrawn by the branch's gradient from a replay
    copy that the forward part sets: the split is refused (the copy would hold another
    call's state by then) and the gradient rematerializes, as logged."""
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            x = x * tf.random.uniform([2], seed=3)
        return x

    x = tf.constant([1.0, 2.0])
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
    assert "rematerializes the forward pass" in caplog.text
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), y.numpy() / x.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["sync", "eager", "background"])
def test_numba_backend(mode):
    before = tf.config.get_compile_mode()
    tf.config.set_compile_mode(mode)
    try:
        w = tf.Variable(W1)

        @tf.function(backend="numba")
        def f(x):
            return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) ** 2)

        for _ in range(2):  # the first call may run before the compile finishes
            with tf.GradientTape() as tape:
                xt = tf.constant(X)
                tape.watch(xt)
                y = f(xt)
            gx, gw = tape.gradient(y, [xt, w])
        h = np.maximum(X @ W1, 0)
        np.testing.assert_allclose(gw.numpy(), X.T @ (2 * h), rtol=1e-5)
        np.testing.assert_allclose(gx.numpy(), (2 * h) @ W1.T, rtol=1e-5)
    finally:
        tf.config.set_compile_mode(before)


def test_one_split_serves_every_shape_of_a_relaxed_signature():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        return tf.reduce_sum(tf.matmul(x, tf.constant(W1)) ** 2)

    for rows in (2, 5):
        x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 10
        _, (g,) = _grads(f, [x])
        np.testing.assert_allclose(g.numpy(), 2 * (x @ W1) @ W1.T, rtol=1e-5)
    split = f.get_concrete_function()._split
    assert split.forward.graph.params[0].type.shape == (None, 3)
