"""Helpers shared by the generated staged-op tests of every backend: examples from the op
table, inputs, the gradient objective and comparisons with dtype-aware tolerances."""
from __future__ import annotations

import zlib

import numpy as np

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt

RTOL, ATOL = 1e-12, 1e-12        # identical kernels: staged values must match bit for bit-ish
GRAD_RTOL, GRAD_ATOL = 1e-9, 1e-11  # gradients: the same rules, possibly reassociated sums


def seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def examples(name: str, d: dt.DType) -> list:
    return list(OPS[name].examples(np.random.default_rng(seed(name, d.name)), d))


def is_python(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def inputs(ex) -> list:
    """tf.constant for arrays and NumPy scalars; Python scalars stay Python values (eager and
    staged get the very same objects)."""
    return [x if is_python(x) else tf.constant(np.asarray(x)) for x in ex.inputs]


def as_list(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def assert_same_tensor(actual, expected, where: str) -> None:
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    a, e = np.asarray(actual.numpy()), np.asarray(expected.numpy())
    assert a.shape == e.shape, f"{where}: shape {a.shape} != {e.shape}"
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(a, e, err_msg=where)


def weights(out, seed: int):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, np.shape(out)) * rng.choice([-1.0, 1.0], np.shape(out))


class Objective:
    """sum_k sum(out_k * w_k) (+ sum(out_k**2 * u_k) / 2 with ``quadratic``) over the float
    outputs of ``op`` applied to the inputs."""

    def __init__(self, name: str, ex, quadratic: bool = False):
        self.op, self.attrs, self.quadratic = OPS[name], ex.attrs, quadratic
        self.xs = inputs(ex)
        outs = as_list(bind(self.op, *self.xs, **self.attrs))
        base = seed(name)
        self.w = [tf.constant(weights(o.numpy(), base + k).astype(o.dtype.np))
                  if o.dtype.is_floating else None for k, o in enumerate(outs)]
        self.u = [tf.constant(weights(o.numpy(), base + 99 + k).astype(o.dtype.np))
                  if o.dtype.is_floating else None for k, o in enumerate(outs)]
        self.sources = [i for i, x in enumerate(self.xs)
                        if isinstance(x, tf.Tensor) and x.dtype.is_floating]

    def __call__(self, *xs):
        total = None
        for o, w, u in zip(as_list(bind(self.op, *xs, **self.attrs)), self.w, self.u):
            if w is None:
                continue
            term = tf.reduce_sum(o * w)
            if self.quadratic:
                term = term + tf.reduce_sum(o * o * u) * 0.5
            total = term if total is None else total + term
        return total


def first_order(fn, xs, sources):
    with tf.GradientTape() as tape:
        for i in sources:
            tape.watch(xs[i])
        y = fn(*xs)
    return y, tape.gradient(y, [xs[i] for i in sources])


def second_order(fn, xs, sources, vs):
    with tf.GradientTape() as outer:
        for i in sources:
            outer.watch(xs[i])
        with tf.GradientTape() as inner:
            for i in sources:
                inner.watch(xs[i])
            y = fn(*xs)
        gs = inner.gradient(y, [xs[i] for i in sources])
        dot = tf.add_n([tf.reduce_sum(g * v) for g, v in zip(gs, vs) if g is not None]) \
            if any(g is not None for g in gs) else None
    if dot is None:
        return gs, [None] * len(sources)
    return gs, outer.gradient(dot, [xs[i] for i in sources])


def assert_same_grads(actual, expected, where: str) -> None:
    assert len(actual) == len(expected)
    for k, (a, e) in enumerate(zip(actual, expected)):
        if e is None or a is None:
            assert a is None and e is None, f"{where}: gradient {k} is {a} staged, {e} eager"
            continue
        assert a.dtype == e.dtype, f"{where}: gradient {k} dtype"
        np.testing.assert_allclose(np.asarray(a.numpy()), np.asarray(e.numpy()),
                                   rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{where}: grad {k}")


