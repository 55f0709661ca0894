"""``tf.linalg.sqrtm`` (``tf.linalg.matrix_square_root``): the principal square root of each
square matrix by the scaled product-form Denman-Beavers iteration (Higham, "Functions of
Matrices", eq. 6.29), composed of inverses, log-determinants and matmuls inside a while loop,
so it runs eagerly and staged and is differentiable through its primitives. A module of its own
for the same reason as :mod:`.linalg_expm` (the loop's import)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.tensor import Tensor
from stagecraft.ops.array_ops import expand_dims, eye, shape
from stagecraft.ops.linalg_ops import float_matrix, inv, slogdet
from stagecraft.ops.math_ops import abs as abs_
from stagecraft.ops.math_ops import (cast, exp, logical_and, greater, less, matmul,
                                     reduce_max)
from stagecraft.staging.while_loop import while_loop

_MAX_ITERATIONS = 50  # the scaled iteration converges quadratically; ~10 are typical


def sqrtm(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The principal square root ``X`` (``X @ X == input``, eigenvalues of ``X`` in the right
    half plane) of each square matrix in the last two dims. Each matrix must be non-singular
    with no eigenvalue on the closed negative real axis (TensorFlow's Schur method also takes
    singular ones; here they give NaN).

    >>> import stagecraft as tf
    >>> tf.linalg.sqrtm([[4.0, 0.0], [0.0, 9.0]]).numpy().round(5).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    """
    a = float_matrix(input, "sqrtm")
    n = a.shape[-1]
    ident = eye(shape(a)[-1], dtype=a.dtype) if n is None else np.eye(n, dtype=a.dtype.np)
    size = cast(shape(a)[-1], a.dtype) if n is None else float(n)
    tol = 10.0 * float(np.finfo(a.dtype.np).eps)

    def step(i: Tensor, m: Tensor, y: Tensor) -> tuple:
        m_inv = inv(m)
        # determinant scaling, mu = |det M|^(-1/(2n)), from the log so it cannot overflow
        mu = exp(-slogdet(m).log_abs_determinant / (2.0 * size))
        mu = expand_dims(expand_dims(mu, -1), -1)
        scaled_inv = m_inv / (mu * mu)
        y = 0.5 * mu * matmul(y, ident + scaled_inv)
        m = 0.5 * (ident + 0.5 * (mu * mu * m + scaled_inv))
        return i + 1, m, y

    def unconverged(i: Tensor, m: Tensor, y: Tensor) -> Tensor:
        return logical_and(less(i, _MAX_ITERATIONS),
                           greater(reduce_max(abs_(m - ident)), tol))

    _, _, root = while_loop(unconverged, step, [0, a, a])
    return root


matrix_square_root = sqrtm

__all__ = ["sqrtm", "matrix_square_root"]
