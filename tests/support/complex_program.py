"""A program over complex tensors for the backend tests: complex linear algebra (inverse,
determinant, solve, eig, adjoint matmul), a chain of complex elementwise math, reductions,
casts and an FFT; ``check_staged`` stages it on a backend and compares with eager results."""
from __future__ import annotations

import numpy as np

import stagecraft as tf

from support.compare import BACKEND_TOL, assert_tensors_match


def _matrices(dtype):
    g = np.random.default_rng(7)
    a = g.uniform(-1, 1, (2, 3, 3)) + 1j * g.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)
    b = g.uniform(-1, 1, (2, 3, 2)) + 1j * g.uniform(-1, 1, (2, 3, 2))
    return tf.constant(a.astype(dtype)), tf.constant(b.astype(dtype))


def program(a: tf.Tensor, b: tf.Tensor) -> list:
    e = tf.linalg.eigvals(a)
    z = tf.exp(a) * tf.sqrt(a + 2.0) / (tf.cos(a) + 3.0)
    return [tf.linalg.inv(a), tf.linalg.det(a), tf.linalg.solve(a, b),
            tf.linalg.solve(a, b, adjoint=True), tf.matmul(a, b, adjoint_a=True),
            tf.reduce_sum(e * tf.math.conj(e), axis=-1), tf.abs(z), tf.math.angle(z),
            tf.cast(z, tf.float32), tf.reduce_prod(z, axis=-1), tf.reduce_mean(z, axis=1),
            tf.signal.fft2d(z)]


def check_staged(backend: str, dtype: type) -> None:
    """``program`` staged on ``backend`` equals its eager results."""
    a, b = _matrices(dtype)
    want = program(a, b)
    got = tf.function(program, backend=backend)(a, b)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_tensors_match(g if backend == "numba" else g.cpu(), w,
                             f"output {k} on {backend}", BACKEND_TOL)
