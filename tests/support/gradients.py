"""Gradient objectives for the generated op tests: ``sum(out * w)`` over an op's float
outputs (``w`` a fixed random weight, so symmetric errors do not cancel), and first- and
second-order tape gradients of any function of tensors."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS

from support.op_examples import as_list, inputs, seed


def weights(out: Any, seed: int) -> np.ndarray:
    """Weights of ``out``'s shape: magnitudes in [0.5, 1.5], random signs.

    >>> bool(np.all(np.abs(weights(np.zeros(4), 0)) >= 0.5))
    True
    """
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, np.shape(out)) * rng.choice([-1.0, 1.0], np.shape(out))


class Objective:
    """sum_k sum(out_k * w_k) (+ sum(out_k**2 * u_k) / 2 with ``quadratic``) over the float
    outputs of op ``name`` applied to the example's inputs.

    >>> from stagecraft.ir import dtypes as dt
    >>> from support.op_examples import examples
    >>> obj = Objective("tanh", examples("tanh", dt.float64)[0])
    >>> obj(*obj.xs).dtype.name
    'float64'
    """

    def __init__(self, name: str, ex: Any, quadratic: bool = False):
        self.op, self.attrs, self.quadratic = OPS[name], ex.attrs, quadratic
        self.xs = inputs(ex)
        outs = as_list(bind(self.op, *self.xs, **self.attrs))
        base = seed(name)
        # (complex outputs: real weights, so the objective's real part is the loss)
        trainable = [o.dtype.is_floating or o.dtype.is_complex for o in outs]
        self.w = [tf.constant(weights(o.numpy(), base + k).astype(o.dtype.np))
                  if t else None for k, (o, t) in enumerate(zip(outs, trainable))]
        self.u = [tf.constant(weights(o.numpy(), base + 99 + k).astype(o.dtype.np))
                  if t else None for k, (o, t) in enumerate(zip(outs, trainable))]
        self.sources = [i for i, x in enumerate(self.xs)
                        if isinstance(x, tf.Tensor) and x.dtype.is_floating]

    def __call__(self, *xs: Any) -> Any:
        total = None
        for o, w, u in zip(as_list(bind(self.op, *xs, **self.attrs)), self.w, self.u):
            if w is None:
                continue
            term = tf.reduce_sum(o * w)
            if self.quadratic:
                term = term + tf.reduce_sum(o * o * u) * 0.5
            total = term if total is None else total + term
        return tf.math.real(total) if total is not None else None


def central_differences(f: Callable[[np.ndarray], float], x: np.ndarray,
                        eps: float = 1e-6) -> np.ndarray:
    """The gradient of the scalar ``f`` at the float64 array ``x`` by central differences.

    >>> central_differences(lambda v: float((v ** 2).sum()), np.array([1.0, 2.0])).round(6)
    array([2., 4.])
    """
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def first_order(fn: Callable, xs: Sequence, sources: Sequence[int]) -> tuple:
    """``(fn(*xs), gradients w.r.t. xs[i] for i in sources)`` with one tape.

    >>> y, (g,) = first_order(lambda x: x * x, [tf.constant(3.0)], [0])
    >>> float(g)
    6.0
    """
    with tf.GradientTape() as tape:
        for i in sources:
            tape.watch(xs[i])
        y = fn(*xs)
    return y, tape.gradient(y, [xs[i] for i in sources])


def second_order(fn: Callable, xs: Sequence, sources: Sequence[int], vs: Sequence) -> tuple:
    """``(gradients, Hessian-vector products with vs)`` with nested tapes.

    >>> gs, (h,) = second_order(lambda x: x * x * x, [tf.constant(2.0)], [0], [tf.constant(1.0)])
    >>> float(h)
    12.0
    """
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


def gradients_traced_inside(fn: Callable, xs: Sequence, sources: Sequence[int],
                            backend: str) -> list:
    """The gradients of ``fn(*xs)`` w.r.t. ``xs[i]`` for ``i`` in ``sources``, with the tape
    inside a ``tf.function`` on ``backend``: the VJP rules themselves are staged.

    >>> [float(g) for g in gradients_traced_inside(lambda x: x * x, [tf.constant(3.0)], [0],
    ...                                            "reference")]
    [6.0]
    """
    @tf.function(backend=backend)
    def inside(*args: Any) -> list:
        with tf.GradientTape() as tape:
            for j in sources:
                tape.watch(args[j])
            y = fn(*args)
        return tape.gradient(y, [args[j] for j in sources])
    return inside(*xs)
