"""``tf.linalg.expm``: the matrix exponential by scaling and squaring with a Pade
approximant, composed of matmul, solve and a while loop (so differentiable and stageable). A
module of its own: the loop's import would close a cycle through the gradient rules, which
import :mod:`.linalg_ops`."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.tensor import Tensor
from stagecraft.ops.array_ops import expand_dims, eye, shape
from stagecraft.ops.linalg_ops import float_matrix, solve
from stagecraft.ops.math_ops import abs as abs_
from stagecraft.ops.math_ops import pow as pow_
from stagecraft.ops.math_ops import (cast, ceil, greater, less, log, matmul, maximum,
                                     reduce_max, reduce_sum, where)
from stagecraft.staging.while_loop import while_loop

# Pade approximant of degree 13 (Higham 2005, "The scaling and squaring method for the
# matrix exponential revisited"): numerator coefficients, and the 1-norm up to which it is
# accurate to double precision without scaling.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The matrix exponential of each square matrix, by scaling and squaring: A / 2^s has a
    1-norm below 5.37, its [13/13] Pade approximant is exact to double precision, and s
    squarings undo the scaling (s per matrix; the loop runs to the largest, staged as a
    while loop). Differentiable through its matmuls, solve and loop.

    >>> import stagecraft as tf
    >>> tf.linalg.expm([[0.0, 1.0], [0.0, 0.0]]).numpy().round(6).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    a = float_matrix(input, "expm")
    norm = reduce_max(reduce_sum(abs_(a), axis=-2), axis=-1)
    # log(0) = -inf: a zero matrix needs no squaring
    squarings = maximum(ceil(log(norm / _THETA13) / np.log(2.0)), 0.0)
    x = a / expand_dims(expand_dims(pow_(2.0, squarings), -1), -1)
    b = _PADE13
    ident = eye(shape(x)[-1], dtype=a.dtype) if x.shape[-1] is None else \
        np.eye(x.shape[-1], dtype=a.dtype.np)
    x2 = matmul(x, x)
    x4 = matmul(x2, x2)
    x6 = matmul(x4, x2)
    u = matmul(x, matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2)
               + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * ident)
    v = (matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4
         + b[2] * x2 + b[0] * ident)
    result = solve(v - u, v + u)
    more = expand_dims(expand_dims(squarings, -1), -1)

    def square(i, r):
        return i + 1.0, where(greater(more, i), matmul(r, r), r)

    _, result = while_loop(lambda i, r: less(i, reduce_max(squarings)), square,
                           [cast(0.0, a.dtype), result])
    return result


__all__ = ["expm"]
