"""Gradients through complex tensors against finite differences in the real and imaginary
parts, with TensorFlow's convention: for a real loss L and z = x + iy the gradient is
dL/dx + i dL/dy. Every op of the table that takes complex128 and has a VJP rule is checked on
its examples (L = sum Re(conj(w) * out) for complex outputs, sum(w * out) for real ones)."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.autodiff.vjps import NOT_DIFFERENTIABLE, VJPS
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt

from support.op_examples import as_list, examples, rng

C128 = sorted(n for n, op in OPS.items() if dt.complex128 in op.dtypes
              and n in VJPS and n not in NOT_DIFFERENTIABLE and n not in (
                  "stop_gradient",
                  "eig",  # eigenvectors of a complex matrix have an arbitrary phase: below
              ))
EPS, TOL = 1e-6, 2e-5


def _weights(outs: list, key: str) -> list:
    g = rng("complex-weights", key)
    ws = []
    for o in outs:
        shape = np.shape(o)
        w = g.uniform(0.5, 1.5, shape) * g.choice([-1.0, 1.0], shape)
        if o.dtype.kind == "c":
            w = w + 1j * g.uniform(-1.0, 1.0, shape)
        ws.append(w if o.dtype.kind in "fc" else None)
    return ws


def _loss_np(name: str, arrays: list, attrs: dict, ws: list) -> float:
    outs = as_list(OPS[name].kernel(*arrays, **attrs))
    total = 0.0
    for o, w in zip(outs, ws):
        if w is not None:
            total += float(np.sum(np.real(np.conj(w) * np.asarray(o))))
    return total


def _numeric_grad(name: str, arrays: list, attrs: dict, ws: list, i: int) -> np.ndarray:
    x = arrays[i]
    grad = np.zeros(x.shape, np.complex128 if x.dtype.kind == "c" else np.float64)
    parts = (1.0, 1j) if x.dtype.kind == "c" else (1.0,)
    for k in np.ndindex(x.shape):
        for p in parts:
            hi, lo = x.copy(), x.copy()
            hi[k] += EPS * p
            lo[k] -= EPS * p
            up = _loss_np(name, [hi if j == i else a for j, a in enumerate(arrays)], attrs, ws)
            down = _loss_np(name, [lo if j == i else a for j, a in enumerate(arrays)], attrs, ws)
            grad[k] += (up - down) / (2 * EPS) * p
    return grad


def _tape_grads(name: str, arrays: list, attrs: dict, ws: list, sources: list) -> list:
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        for i in sources:
            tape.watch(xs[i])
        outs = as_list(bind(OPS[name], *xs, **attrs))
        total = None
        for o, w in zip(outs, ws):
            if w is None:
                continue
            term = tf.reduce_sum(tf.math.real(tf.math.conj(tf.constant(w.astype(
                np.complex128 if o.dtype.is_complex else o.dtype.np))) * o))
            total = term if total is None else total + term
    return tape.gradient(total, [xs[i] for i in sources])


@pytest.mark.parametrize("name", C128)
def test_complex_gradient_matches_finite_differences(name):
    for n, ex in enumerate(examples(name, dt.complex128)[:3]):
        arrays = [np.array(x) for x in ex.inputs]
        sources = [i for i, x in enumerate(arrays) if x.dtype.kind in "fc" and x.size <= 24]
        if not sources:
            continue
        ws = _weights(as_list(OPS[name].kernel(*arrays, **ex.attrs)), f"{name}/{n}")
        got = _tape_grads(name, arrays, ex.attrs, ws, sources)
        for i, g in zip(sources, got):
            want = _numeric_grad(name, arrays, ex.attrs, ws, i)
            where = f"{name} example {n} input {i}"
            if g is None:  # (shape-only inputs, zeros_like, stop_gradient: TF's None)
                assert not np.any(want), where
                continue
            assert g.dtype.np == arrays[i].dtype, where
            np.testing.assert_allclose(g.numpy(), want, rtol=TOL, atol=TOL, err_msg=where)


def test_every_complex_op_is_checked():
    complex_only = {n for n in VJPS if all(d.is_complex for d in OPS[n].dtypes)}
    assert complex_only == {"real", "imag", "conj", "angle", "fft", "irfft"}
    assert complex_only | {"add", "multiply", "divide", "exp", "abs", "matmul", "reduce_prod",
                           "cast", "pow"} <= set(C128)


def test_complex_of_real_parts_gradient():
    re, im = tf.constant([1.0, -2.0], tf.float64), tf.constant([0.5, 3.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([re, im])
        z = tf.complex(re, im)
        loss = tf.reduce_sum(tf.abs(z * z))  # |z|^2 = re^2 + im^2
    g_re, g_im = tape.gradient(loss, [re, im])
    np.testing.assert_allclose(g_re.numpy(), 2 * re.numpy())
    np.testing.assert_allclose(g_im.numpy(), 2 * im.numpy())


def test_gradient_convention_is_tensorflows():
    # TensorFlow: d/dz of |z|^2 (as a real loss) is 2z, i.e. dL/dx + i dL/dy
    z = tf.constant([1 + 2j, -3 + 0.5j])
    with tf.GradientTape() as tape:
        tape.watch(z)
        loss = tf.reduce_sum(tf.math.real(z * tf.math.conj(z)))
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), 2 * z.numpy())


def test_second_order_through_complex():
    # L = Re(z^3) at z = x real-parted: d2L/dx2 = Re(6z)
    z = tf.constant(1.5 + 0.5j)
    with tf.GradientTape() as outer:
        outer.watch(z)
        with tf.GradientTape() as inner:
            inner.watch(z)
            loss = tf.math.real(z * z * z)
        g = inner.gradient(loss, z)  # conj(3 z^2)
        gx = tf.math.real(g)
    h = outer.gradient(gx, z)  # d Re(3 z^2)/dx + i d Re(3 z^2)/dy = 6 conj(z)
    np.testing.assert_allclose(h.numpy(), 6 * np.conj(z.numpy()), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eig_gradient_of_phase_invariant_losses(dtype):
    # Re(sum w e) + sum(u |v|^2) does not depend on the eigenvectors' phases (LAPACK's choice)
    g = rng("eig-gradient")
    a = np.diag([1.0, 3.0, 5.0]) + g.uniform(-0.5, 0.5, (3, 3))
    if dtype == np.complex128:
        a = a + 1j * g.uniform(-0.5, 0.5, (3, 3))
    w = g.uniform(-1, 1, 3) + 1j * g.uniform(-1, 1, 3)
    u = g.uniform(0.5, 1.5, (3, 3))

    def loss_np(x):
        e, v = np.linalg.eig(x.astype(np.complex128))
        order = np.argsort(e.real)  # (the test matrices' eigenvalues stay apart)
        return float(np.sum(np.real(np.conj(w) * e[order])) + np.sum(u * np.abs(v[:, order]) ** 2))

    x = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        e, v = tf.linalg.eig(x)
        order = np.argsort(e.numpy().real)
        e, v = tf.gather(e, order), tf.gather(v, order, axis=1)
        loss = tf.reduce_sum(tf.math.real(tf.math.conj(tf.constant(w)) * e)) + \
            tf.reduce_sum(tf.constant(u) * tf.square(tf.abs(v)))
    got = tape.gradient(loss, x).numpy()
    want = np.zeros(a.shape, a.dtype)
    for k in np.ndindex(a.shape):
        for p in ((1.0, 1j) if dtype == np.complex128 else (1.0,)):
            hi, lo = a.copy(), a.copy()
            hi[k] += EPS * p
            lo[k] -= EPS * p
            want[k] += (loss_np(hi) - loss_np(lo)) / (2 * EPS) * p
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _complex_loss(z):
    w = tf.exp(z) * tf.math.conj(z) + tf.signal.fft(z * 1j)
    w = tf.cond(tf.math.real(tf.reduce_sum(z)) > 0.0, lambda: w * 2.0, lambda: w - z)
    w = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * z), (0, w))[1]
    return tf.reduce_sum(tf.abs(w) + tf.math.angle(w))


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_staged_complex_gradient_equals_eager(backend):
    # the staged call, cond and while gradients carry complex values like eager ones
    z = tf.constant([0.5 + 0.25j, -0.75 + 1.0j, 0.3 - 0.6j])
    staged = tf.function(_complex_loss, backend=backend)
    grads = []
    for fn in (_complex_loss, staged):
        with tf.GradientTape() as tape:
            tape.watch(z)
            loss = fn(z)
        grads.append(tape.gradient(loss, z))
    assert grads[1] is not None and grads[1].dtype == tf.complex128
    np.testing.assert_allclose(grads[1].numpy(), grads[0].numpy(), rtol=1e-9, atol=1e-12)
