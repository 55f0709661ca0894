"""Gradients of tf.linalg's decompositions, solvers and their compositions against central
finite differences: directional derivatives <grad f(x), D> = (f(x + hD) - f(x - hD)) / 2h for
random directions D (symmetric ones where TensorFlow's gradient is defined for symmetric
inputs: cholesky and what is built on it), f = sum(out * w) for a fixed random w; Hessian-vector
products of nested tapes against differences of first-order gradients; the same gradients
computed inside a staged function. (The primitives' examples get the generated checks of
tests/frontend/test_gradients_generated.py too.)"""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(1818)
H = 1e-6
TOL = 1e-6


def _spd(*shape):
    a = rng.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(*shape):
    a = rng.normal(size=shape)
    return a + np.swapaxes(a, -1, -2) + np.diag(np.arange(shape[-1]) * 1.5)


SQ = rng.normal(size=(3, 3)) + 3 * np.eye(3)
SQB = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
TALL = rng.normal(size=(4, 3))
TALL1 = rng.normal(size=(4, 3))
WIDE = rng.normal(size=(2, 3, 5))
RHS = rng.normal(size=(3, 2))
RHS4 = rng.normal(size=(4, 2))
SPD = _spd(3, 3)
SPDB = _spd(2, 3, 3)
SYM = _sym(4, 4)


def _sum_parts(*parts):
    return tf.concat([tf.reshape(p, [-1]) for p in parts], 0)


# name: (function of tensors -> tensor, float64 arguments, indices of symmetric arguments)
CASES = {
    "inv_adjoint": (lambda a: tf.linalg.inv(a, adjoint=True), (SQB,), ()),
    "det": (tf.linalg.det, (SQB,), ()),
    "slogdet": (lambda a: tf.linalg.slogdet(a).log_abs_determinant, (SQ,), ()),
    "cholesky": (tf.linalg.cholesky, (SPDB,), (0,)),
    "qr_tall": (lambda a: _sum_parts(*tf.linalg.qr(a)), (TALL,), ()),
    "qr_wide_batched": (lambda a: _sum_parts(*tf.linalg.qr(a)), (WIDE,), ()),
    "svd_tall": (lambda a: _sum_parts(*tf.linalg.svd(a)), (TALL,), ()),
    "svd_wide_batched": (lambda a: _sum_parts(*tf.linalg.svd(a)), (WIDE,), ()),
    "svd_full_tall": (lambda a: _sum_parts(*tf.linalg.svd(a, full_matrices=True)), (TALL1,),
                      ()),
    "svd_values": (lambda a: tf.linalg.svd(a, compute_uv=False), (WIDE,), ()),
    "eigh": (lambda a: _sum_parts(*tf.linalg.eigh(a)), (SYM,), ()),
    "eigvalsh": (tf.linalg.eigvalsh, (SYM,), ()),
    "solve": (tf.linalg.solve, (SQ, RHS), ()),
    "triangular_solve_broadcast": (
        lambda a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True), (SQB, RHS),
        ()),
    "cholesky_solve": (lambda a, b: tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b),
                       (SPD, RHS), (0,)),
    "logdet": (tf.linalg.logdet, (SPDB,), (0,)),
    "lstsq": (tf.linalg.lstsq, (TALL, RHS4), ()),
    "lstsq_l2_wide": (lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.3), (TALL.T, RHS),
                      ()),
    "lstsq_slow": (lambda a, b: tf.linalg.lstsq(a, b, fast=False), (TALL, RHS4), ()),
    "pinv": (tf.linalg.pinv, (WIDE,), ()),
    "set_diag": (lambda x, d: tf.linalg.set_diag(x, d, k=1), (TALL.T, RHS[:, 0]), ()),
    "adjoint": (tf.linalg.adjoint, (WIDE,), ()),
    "expm": (tf.linalg.expm, (SQB * 2.0,), ()),
    "lu": (lambda a: tf.linalg.lu(a).lu, (SQB,), ()),
    "lu_solve": (lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(a), b), (SQ, RHS), ()),
}

SECOND_ORDER = ["lu", "inv_adjoint", "det", "solve", "svd_values", "eigvalsh", "lstsq", "pinv",
                "qr_tall", "triangular_solve_broadcast"]


class Check:
    """f(xs) = sum(fn(xs) * w) and its tape gradients."""

    def __init__(self, name):
        self.fn, self.args, self.sym = CASES[name]
        self.args = [np.asarray(a, np.float64) for a in self.args]
        out = self.fn(*[tf.constant(a) for a in self.args]).numpy()
        self.w = rng.uniform(0.5, 1.5, out.shape) * rng.choice([-1.0, 1.0], out.shape)

    def value(self, args) -> float:
        return float(tf.reduce_sum(self.fn(*[tf.constant(a) for a in args]) * self.w))

    def direction(self, i):
        d = rng.normal(size=self.args[i].shape)
        return d + np.swapaxes(d, -1, -2) if i in self.sym else d

    def grads(self, args):
        ts = [tf.constant(a) for a in args]
        with tf.GradientTape() as tape:
            tape.watch(ts)
            y = tf.reduce_sum(self.fn(*ts) * self.w)
        return [g.numpy() for g in tape.gradient(y, ts)]

    def along(self, i, d, args=None) -> float:
        """The central difference of f along direction ``d`` of argument ``i``."""
        args = self.args if args is None else args
        plus = [a + H * d if k == i else a for k, a in enumerate(args)]
        minus = [a - H * d if k == i else a for k, a in enumerate(args)]
        return (self.value(plus) - self.value(minus)) / (2 * H)


@pytest.mark.parametrize("name", list(CASES))
def test_first_order(name):
    c = Check(name)
    grads = c.grads(c.args)
    for i, g in enumerate(grads):
        assert g.shape == c.args[i].shape
        for _ in range(3):
            d = c.direction(i)
            np.testing.assert_allclose(np.sum(g * d), c.along(i, d), rtol=TOL, atol=TOL,
                                       err_msg=f"{name}: input {i}")


def test_cholesky_gradient_is_tensorflows_symmetric_one():
    c = Check("cholesky")
    g = c.grads(c.args)[0]
    np.testing.assert_allclose(g, np.swapaxes(g, -1, -2), rtol=1e-12, atol=1e-12)


def test_eigh_gradient_lies_on_the_lower_triangle_it_reads():
    c = Check("eigh")
    g = c.grads(c.args)[0]
    assert np.all(np.triu(g, 1) == 0)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order(name):
    """d/dx <grad f(x), v> (nested tapes) against differences of the tape gradient."""
    c = Check(name)
    vs = [rng.normal(size=a.shape) for a in c.args]
    ts = [tf.constant(a) for a in c.args]
    with tf.GradientTape() as outer:
        outer.watch(ts)
        with tf.GradientTape() as inner:
            inner.watch(ts)
            y = tf.reduce_sum(c.fn(*ts) * c.w)
        gs = inner.gradient(y, ts)
        gv = tf.add_n([tf.reduce_sum(g * v) for g, v in zip(gs, vs)])
    hv = [h.numpy() for h in outer.gradient(gv, ts)]
    plus = c.grads([a + H * v for a, v in zip(c.args, vs)])
    minus = c.grads([a - H * v for a, v in zip(c.args, vs)])
    for i, (h, p, m) in enumerate(zip(hv, plus, minus)):
        np.testing.assert_allclose(h, (p - m) / (2 * H), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name}: input {i}")


STAGED = ["expm", "inv_adjoint", "cholesky", "qr_wide_batched", "svd_tall", "eigh", "lstsq",
          "pinv", "triangular_solve_broadcast"]


def _staged_grads_equal_eager(name: str, unknown_dims: bool) -> None:
    c = Check(name)
    specs = [tf.TensorSpec([None] * a.ndim, tf.float64) for a in c.args] if unknown_dims \
        else None

    @tf.function(input_signature=specs, backend="reference")
    def grads(*ts):
        with tf.GradientTape() as tape:
            tape.watch(ts)
            y = tf.reduce_sum(c.fn(*ts) * c.w)
        return tape.gradient(y, ts)

    for g, e in zip(grads(*[tf.constant(a) for a in c.args]), c.grads(c.args)):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", STAGED)
def test_gradients_traced_inside_a_function_equal_eager(name):
    _staged_grads_equal_eager(name, unknown_dims=False)


DYNAMIC = ["lu_solve", "inv_adjoint", "cholesky", "eigh", "eigvalsh", "logdet", "solve",
           "triangular_solve_broadcast"]


@pytest.mark.parametrize("name", DYNAMIC)
def test_gradients_with_unknown_matrix_dimensions(name):
    """Traced with every dimension unknown, the rules build their masks and identities from
    the run-time shape."""
    _staged_grads_equal_eager(name, unknown_dims=True)


@pytest.mark.parametrize("name", ["qr_tall", "svd_tall"])
def test_qr_and_svd_gradients_need_the_matrix_dimensions(name):
    c = Check(name)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)],
                 backend="reference")
    def grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(c.fn(x))
        return tape.gradient(y, x)

    with pytest.raises(tf.errors.InvalidArgumentError, match="needs the matrix dimensions"):
        grads(tf.constant(c.args[0]))
