"""Staged gradients equal eager gradients, generated over

    control-flow construct × how the differentiated value reaches it × derivative order
    × where the tape is (inside the staged function, or outside around its call) × backend.

Each case runs one program twice, eagerly and under ``@tf.function``, and compares the
gradients. Sources: an argument, a captured eager tensor (both watched explicitly), a variable
(watched automatically), a variable read after an ``assign`` in the same function, a variable
reached through an undecorated helper, and a ``tf.Module``'s variable read in its ``__call__``.
Every case runs on the reference interpreter; the Numba backend runs a sample that covers every
construct and every source (``--full-matrix`` runs them all).
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import pytest

import stagecraft as tf

W0 = np.array([[0.5, -0.3], [0.2, 0.4]])
X0 = np.array([[1.0, 2.0]])


def _layer(h, w):
    return tf.tanh(tf.matmul(h, w))


# Constructs: h is the input, w() returns the weight tensor (read where the construct reads it).
def _plain(h, w, n):
    return tf.reduce_sum(_layer(h, w()))


def _if(h, w, n):
    if tf.reduce_sum(h) > 0:
        h = _layer(h, w())
    else:
        h = h * 2.0
    return tf.reduce_sum(h)


def _for_range(h, w, n):
    for _ in tf.range(n):
        h = _layer(h, w())
    return tf.reduce_sum(h)


def _while_loop(h, w, n):
    _, h = tf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, _layer(h, w())),
                         (tf.constant(0), h))
    return tf.reduce_sum(h)


def _while_data(h, w, n):  # a data-dependent stop: no known trip count
    i = tf.constant(0)
    while tf.reduce_sum(h) < 100.0 and i < n:
        h = _layer(h, w()) + 1.0
        i += 1
    return tf.reduce_sum(h)


def _if_in_for(h, w, n):
    for i in tf.range(n):
        if i % 2 == 0:
            h = _layer(h, w())
        else:
            h = h * 1.5
    return tf.reduce_sum(h)


def _tf_cond(h, w, n):
    return tf.reduce_sum(tf.cond(tf.reduce_sum(h) > 0, lambda: _layer(h, w()), lambda: h))


CONSTRUCTS: dict[str, Callable] = {
    "plain": _plain, "if": _if, "for_range": _for_range, "while_loop": _while_loop,
    "while_data": _while_data, "if_in_for": _if_in_for, "tf_cond": _tf_cond}
SOURCES = ("argument", "captured", "variable", "variable_after_assign", "helper", "module")
ORDERS = (1, 2)
TAPES = ("inside", "outside")


class _Model(tf.Module):
    def __init__(self, construct: Callable):
        super().__init__()
        self.w = tf.Variable(W0)
        self.construct = construct

    def __call__(self, h, n):
        return self.construct(h, lambda: self.w, n)


def _program(construct: str, source: str) -> tuple[Callable, Callable]:
    """``loss(x, w_arg)`` and ``target(w_arg)``: the tensor or variable to differentiate by."""
    body = CONSTRUCTS[construct]
    var, captured, model, n = tf.Variable(W0), tf.constant(W0), _Model(body), tf.constant(3)

    def helper(h, w):
        return body(h, w, n)

    def loss(x, w_arg):
        if source == "argument":
            return body(x, lambda: w_arg, n)
        if source == "captured":
            return body(x, lambda: captured, n)
        if source == "variable":
            return body(x, lambda: var, n)
        if source == "variable_after_assign":
            var.assign(var * 1.0)
            return body(x, lambda: var, n)
        if source == "helper":
            return helper(x, lambda: var)
        return model(x, n)

    def target(w_arg):
        return {"argument": w_arg, "captured": captured, "module": model.w}.get(source, var)

    return loss, target


def _gradient(loss: Callable, target: Callable, order: int, x, w_arg):
    src = target(w_arg)
    explicit = not isinstance(src, tf.Variable)
    with tf.GradientTape() as outer:
        if explicit:
            outer.watch(src)
        with tf.GradientTape() as inner:
            if explicit:
                inner.watch(src)
            y = loss(x, w_arg)
        g = inner.gradient(y, src)
        if order == 1:
            return g
        s = tf.reduce_sum(g * g)
    return outer.gradient(s, src)


def _run(construct: str, source: str, order: int, tape: str, staged: bool, backend: str):
    loss, target = _program(construct, source)
    x, w_arg = tf.constant(X0), tf.constant(W0)
    if not staged:
        return _gradient(loss, target, order, x, w_arg)
    if tape == "inside":
        return tf.function(lambda a, b: _gradient(loss, target, order, a, b),
                           backend=backend)(x, w_arg)
    staged_loss = tf.function(loss, backend=backend)
    return _gradient(staged_loss, lambda w: target(w_arg), order, x, w_arg)


ALL = list(itertools.product(CONSTRUCTS, SOURCES, ORDERS, TAPES))
# The Numba sample: each construct once, cycling through sources, orders and tape positions.
NUMBA_SAMPLE = [(c, SOURCES[i % len(SOURCES)], ORDERS[i % 2], TAPES[i // 2 % 2])
                for i, c in enumerate(CONSTRUCTS)]


def _cases():
    for case in ALL:
        yield pytest.param(*case, "reference", id="-".join(map(str, case)) + "-reference")
    for case in ALL:
        marks = () if case in NUMBA_SAMPLE else (pytest.mark.full_matrix,)
        yield pytest.param(*case, "numba", marks=marks, id="-".join(map(str, case)) + "-numba")


def test_numba_sample_covers_every_construct_and_source():
    assert {c for c, *_ in NUMBA_SAMPLE} == set(CONSTRUCTS)
    assert {s for _, s, *_ in NUMBA_SAMPLE} == set(SOURCES)


@pytest.mark.parametrize("construct,source,order,tape,backend", _cases())
def test_staged_gradient_equals_eager(construct, source, order, tape, backend):
    eager = _run(construct, source, order, tape, False, backend)
    assert eager is not None
    staged = _run(construct, source, order, tape, True, backend)
    assert staged is not None, "the staged gradient is None but the eager one is not"
    np.testing.assert_allclose(staged.numpy(), eager.numpy(), rtol=1e-9, atol=1e-12)
