"""Graphs for the IR tests: traced from real functions with ``tf.function`` and built directly
with ``GraphBuilder`` (names, attrs and literals the tracer rarely produces)."""
from __future__ import annotations

from typing import Callable

import numpy as np

import stagecraft as tf
from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Graph, GraphBuilder, Literal
from stagecraft.ir.types import TensorType

F32 = dt.float32


def t(dtype: dt.DType, *dims) -> TensorType:
    return TensorType(dtype, tuple(dims))


# ------------------------------------------------------------------------- traced

def elementwise() -> Graph:
    @tf.function
    def f(x, y):
        return tf.tanh(x * y + 1.0) - tf.exp(-x) / (y + 2.0)
    return f.get_concrete_function(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])).graph


def reductions() -> Graph:
    @tf.function
    def f(x):
        return tf.reduce_sum(x, axis=1), tf.reduce_max(x), tf.reduce_mean(x, axis=0,
                                                                          keepdims=True)
    return f.get_concrete_function(tf.ones([2, 3])).graph


def slicing() -> Graph:
    @tf.function
    def f(x, i):
        return x[i], x[1:, None, ::2], x[..., -1], x[i, :2]
    return f.get_concrete_function(tf.ones([4, 5]), tf.constant(1)).graph


def cond() -> Graph:
    @tf.function
    def f(x, y):
        return tf.cond(tf.reduce_sum(x) > y, lambda: x * y, lambda: x - 1.0)
    return f.get_concrete_function(tf.constant([1.0, 2.0]), tf.constant(0.5)).graph


def while_loop() -> Graph:
    @tf.function
    def f(x, n):
        return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * x), (0, tf.ones([2])))
    return f.get_concrete_function(tf.constant([1.0, 2.0]), tf.constant(3)).graph


def nested_call() -> Graph:
    inner = tf.function(lambda a: a * 2.0 + 1.0)

    @tf.function
    def f(x):
        return inner(x) + inner(x * 3.0)
    return f.get_concrete_function(tf.constant([1.0, 2.0])).graph


def variables() -> Graph:
    v = tf.Variable([1.0, 2.0], name="scale/w")

    @tf.function
    def f(x):
        v.assign_add(x)
        y = v * 2.0
        v.assign(y)
        return v.read_value() + x
    return f.get_concrete_function(tf.constant([1.0, 2.0])).graph


def printing() -> Graph:
    @tf.function
    def f(x):
        tf.print("x is", x, "and 'quoted'\n", x * 2.0, sep=" | ")
        return x
    return f.get_concrete_function(tf.constant([1.0, 2.0])).graph


def constants() -> Graph:
    small = np.array([[1.5, -2.0], [np.inf, np.nan]], np.float32)
    large = np.arange(40, dtype=np.float64).reshape(5, 8) / 7.0

    @tf.function
    def f(x):
        return x + tf.constant(small), tf.reduce_sum(tf.constant(large)), \
            tf.constant([True, False]), tf.constant(np.zeros([0, 3], np.int32))
    return f.get_concrete_function(tf.ones([2, 2])).graph


def unknown_dims() -> Graph:
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return tf.reshape(x, [-1, 1]) * 2.0, x[1:]
    return f.get_concrete_function().graph


def everything() -> Graph:
    v = tf.Variable(0.0)

    @tf.function
    def f(x, i):
        y = tf.reduce_sum(x[i] * 2.0)
        z = tf.cond(y > 0.0, lambda: y + v, lambda: -y)
        _, w = tf.while_loop(lambda k, s: k < 3, lambda k, s: (k + 1, tf.cond(
            s > 1.0, lambda: s / 2.0, lambda: s * 3.0)), (tf.constant(0), z))
        v.assign(w)
        tf.print(w)
        return tf.function(lambda a: a * a)(w) + tf.reduce_sum(tf.constant(np.ones(30, np.float32)))
    return f.get_concrete_function(tf.ones([3, 2]), tf.constant(1)).graph


TRACED: dict[str, Callable[[], Graph]] = {
    f.__name__: f for f in (elementwise, reductions, slicing, cond, while_loop, nested_call,
                            variables, printing, constants, unknown_dims, everything)}


# ------------------------------------------------------------------------- built

def odd_attrs_and_literals() -> Graph:
    """Literals and attributes of every printable kind, odd hints, a ref, no-output equations."""
    b = GraphBuilder("odd")
    x = b.param(t(F32, None, 3), "x")
    r = b.param(TensorType(F32, None), "my var", ref=True)
    n = b.param(t(dt.int64), "7")
    inf = Literal(float("inf"), t(F32))
    (a,) = b.add("add", [x, Literal(float("nan"), t(F32))], [t(F32, None, 3)], hints=["x"])
    (c,) = b.add("maximum", [a, Literal(float("-inf"), t(F32))], [t(F32, None, 3)],
                 hints=["x.1"])
    (d,) = b.add("multiply", [c, inf], [t(F32, None, 3)], hints=["x"])
    (e,) = b.add("add", [n, Literal(-3, t(dt.int64))], [t(dt.int64)])
    (g,) = b.add("logical_and", [Literal(True, t(dt.bool_)), Literal(False, t(dt.bool_))],
                 [t(dt.bool_)])
    b.add("print", [d, e, g], [], {
        "template": (("s", "it's \"quoted\"\n\ttab #hash"), ("t",), ("t",), ("t",)),
        "sep": "", "end": "\n", "stream": "stdout", "summarize": -1})
    b.add("custom", [], [], {"none": None, "flag": True, "f": 1e-05, "big": 1.5e300,
                             "neg": -0.0, "nan": float("nan"), "dtype": dt.float64,
                             "nested": ((1, (2, (3,))), [], (), [dt.int32, None]),
                             "mapping": {"a": (1, 2), 3: [dt.bool_]},
                             "scalar": np.float32(0.25), "npint": np.int64(-5),
                             "empty": np.zeros((0, 2), np.float32),
                             "bools": np.array([[True], [False]])})
    b.add("assign", [r, d], [], {"mode": "sub"}, loc="model.py:12")
    return b.build([d, e, Literal(2.5, t(F32))])
