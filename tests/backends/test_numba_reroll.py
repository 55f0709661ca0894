"""Unrolled loops rolled into a ``for`` loop by the Numba code generator (.reroll): equal to
the reference interpreter, and left unrolled whenever a rolled loop would change what the
code reads."""
from __future__ import annotations

import numpy as np

import stagecraft as tf
from stagecraft.backends.numba_cpu.reroll import MIN_COUNT

LOOP = "each taking the results of the one before: a loop"

w = tf.Variable(np.linspace(-1, 1, 16).reshape(4, 4).astype(np.float32))
b = tf.Variable(np.linspace(0, 0.5, 4).astype(np.float32))


def _layer(x):
    return tf.tanh(tf.matmul(x, w) + b) * 0.5 + x


def _x():
    return tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)


def _check(f, *args):
    """f's source on the Numba backend; its results equal the reference interpreter's."""
    got = tf.function(f, backend="numba")(*args)
    want = tf.function(f, backend="reference")(*args)
    for g, r in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)
    return tf.compiled_source(tf.function(f, backend="numba"), *args).split("def graph_fn")[1]


def test_an_unrolled_python_loop_becomes_a_loop_calling_one_function():
    def f(x):
        for _ in range(10):
            x = _layer(_layer(x))
        return tf.reduce_sum(x, axis=1)

    graph_fn = _check(f, _x())
    assert LOOP in graph_fn
    assert graph_fn.count("_repeated_") <= 3   # one call in the loop, ends cut by alignment


def test_several_carried_values_rotate_through_the_loop():
    def f(a, c):
        for _ in range(8):  # a Fibonacci-like rotation of two tensors
            a, c = c, tf.tanh(tf.matmul(a, w)) + c * 0.5 - b
        return a, c

    graph_fn = _check(f, _x(), _x() * 2.0)
    assert LOOP in graph_fn


def test_values_of_every_step_used_afterwards_keep_the_code_unrolled():
    def f(x):
        xs = []
        for _ in range(6):
            x = _layer(_layer(x))
            xs.append(x)
        return tf.stack(xs)   # every step's value is used after the loop

    assert LOOP not in _check(f, _x())


def test_a_starting_value_also_read_by_every_step_stays_before_the_loop():
    def f(x):
        x0 = x
        for _ in range(6):
            x = tf.tanh(tf.matmul(x, w) + x0) + b   # x0 is both the start and read each step
            x = tf.sigmoid(tf.matmul(x, w) * 0.5) - b
        return x

    # The loop variable cannot start as x0 while x0 is read unchanged: the first step is
    # emitted before the loop, which starts from its result.
    graph_fn = _check(f, _x())
    assert LOOP in graph_fn and "in range(5):" in graph_fn


def test_steps_with_different_constants_stay_unrolled():
    def f(x):
        for i in range(6):
            x = _layer(_layer(x)) * tf.constant(float(i + 1))  # a constant of its own per step
        return x

    assert LOOP not in _check(f, _x())


def test_steps_with_the_same_constant_roll():
    def f(x):
        for _ in range(6):
            x = _layer(_layer(x)) * tf.constant(0.75)
        return x

    assert LOOP in _check(f, _x())


def test_too_few_copies_stay_unrolled():
    def f(x):
        for _ in range(MIN_COUNT - 1):
            x = _layer(_layer(_layer(x)))
        return x

    assert LOOP not in _check(f, _x())


def test_steps_that_each_take_a_gradient_roll_into_a_loop():
    def f(x):
        for _ in range(6):  # gradient descent on x, unrolled: each step has its own tape
            with tf.GradientTape() as tape:
                tape.watch(x)
                energy = tf.reduce_sum(_layer(x) ** 2)
            x = x - 0.01 * tape.gradient(energy, x)
        return x

    assert LOOP in _check(f, _x())


def test_the_gradient_through_an_unrolled_loop_equals_the_reference():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(8):
                y = _layer(y)
            loss = tf.reduce_sum(y * y)
        return loss, tape.gradient(loss, [x, w, b])

    _check(f, _x())   # the backward steps read the forward ones: they do not roll
