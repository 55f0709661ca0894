"""Repeated runs of equations outlined as one function (backends/numba_cpu/repeats.py): runs
repeated in a row or apart, values used after a run, variables read inside one, and literals
that keep runs apart. Staged results must equal the reference interpreter's."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import stagecraft as tf  # noqa: E402
from stagecraft.backends import reference  # noqa: E402
from stagecraft.backends.numba_cpu import compile as numba_compile  # noqa: E402
from stagecraft.backends.numba_cpu.codegen import generate  # noqa: E402
from stagecraft.backends.numba_cpu.repeats import find_repeats  # noqa: E402
from stagecraft.ir import dtypes as dt  # noqa: E402
from stagecraft.ir.graph import GraphBuilder, Literal  # noqa: E402
from stagecraft.ir.types import TensorType  # noqa: E402

RTOL = 1e-12


def _layer(x, w, b):
    h = tf.nn.relu(tf.matmul(x, w) + b)
    h = tf.tanh(h * 0.5 + x) - h
    return tf.exp(-h * h) + tf.sin(h)


def _check(f, *args):
    got = tf.function(f, backend="numba")(*args)
    want = tf.function(f, backend="reference")(*args)
    for g, r in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=RTOL)


def test_runs_repeated_apart_share_one_function_with_variables_read_inside():
    w = tf.Variable(np.linspace(-1, 1, 16).reshape(4, 4))
    b = tf.Variable(np.linspace(0, 1, 4))

    def f(x, y):
        a = _layer(x, w, b)
        c = tf.reduce_sum(a, axis=1, keepdims=True) * y   # different code in between
        d = _layer(c + a, w, b)
        e = tf.matmul(x, tf.matmul(tf.transpose(d), d) * 0.01) - x
        return _layer(e, w, b), tf.reduce_max(d)

    args = (tf.constant(np.arange(12.0).reshape(3, 4) / 10), tf.constant(0.7, tf.float64))
    source = tf.compiled_source(tf.function(f, backend="numba"), *args)
    assert source.count("def _repeated_") == 1
    assert source.count("= _repeated_0(") == 3 and "# a piece repeated 3 times in the graph" in source
    _check(f, *args)


def test_values_made_inside_a_run_and_used_after_it_are_returned():
    w = tf.Variable(np.full((4, 4), 0.25))
    b = tf.Variable(np.linspace(-1, 1, 4))

    def f(x):
        outs = []
        for k in range(3):
            h = tf.nn.relu(tf.matmul(x, w) + b)
            g = tf.tanh(h * 0.5 + x) - h
            x = tf.exp(-g * g) + tf.sin(g) + tf.cast(k, tf.float64)
            outs.append(h)   # an intermediate of every run, used at the end
        return x, tf.add_n(outs)

    _check(f, tf.constant(np.arange(8.0).reshape(2, 4) / 10))


def test_runs_whose_literals_differ_do_not_match():
    t = TensorType(dt.float64, (3,))
    for scales, matched in (((0.5, 0.5, 0.5, 0.5), 4), ((0.5, 0.25, 0.5, 0.25), 2)):
        b = GraphBuilder("g")
        xs = [b.param(t, f"x{k}") for k in range(4)]
        outs = []
        for x, s in zip(xs, scales):
            y = x
            for op in ("exp", "sin", "cos", "tanh", "sin", "exp", "cos", "sin", "tanh", "cos"):
                (y,) = b.add(op, [y], [t])   # every run of equations has the literal
                (y,) = b.add("multiply", [y, Literal.of(s, dt.float64)], [t])
            (y,) = b.add("add", [y, x], [t])   # a gap between the runs
            outs.append(y)
        g = b.build(outs)
        runs = find_repeats(g.eqns)
        counts = sorted({id(r.group): r.group.count for r in runs.values()}.values())
        assert max(counts) == matched, (scales, counts)
        assert ("np.float64(0.25)" in generate(g).source) == (0.25 in scales)
        args = [np.linspace(-1, 1, 3) * (k + 1) for k in range(4)]
        for got, want in zip(numba_compile(g)(args), reference.compile(g)(args)):
            np.testing.assert_allclose(got, want, rtol=RTOL)
