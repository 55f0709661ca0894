"""``stagecraft.linalg``: matrix products, diagonals, traces, bands and norms (the ones not
primitives are compositions, differentiated through their primitives)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.ops.array_ops import eye
from stagecraft.ops.math_ops import matmul
from stagecraft.eager.tensor import Tensor
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ops.array_ops import expand_dims, squeeze, zeros_like
from stagecraft.ops.clip_ops import global_norm
from stagecraft.ops.manip_ops import tensordot
from stagecraft.ops.math_ops import abs, reduce_max, reduce_sum, sqrt, square, where  # noqa: A004
from stagecraft.ops.nn_ops import l2_normalize
from stagecraft.ops.linalg_ops import (adjoint, cholesky, cholesky_solve, det, eigh, eigvalsh,
                                       inv, logdet, lstsq, matrix_rank, matrix_transpose, pinv,
                                       qr, slogdet, solve, svd, triangular_solve)
from stagecraft.ops.linalg_expm import expm
from stagecraft.ops.diag_ops import diag, diag_part, set_diag
from stagecraft.ops.linalg_sqrtm import sqrtm
from stagecraft.ops.linalg_ops import lu, lu_matrix_inverse, lu_reconstruct, lu_solve


def matvec(a: Any, b: Any, transpose_a: bool = False, name: str | None = None) -> Tensor:
    """The matrix-vector product ``a @ b`` over the last axes (batched).

    >>> import stagecraft as tf
    >>> tf.linalg.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]).numpy().tolist()
    [3.0, 7.0]
    """
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    if transpose_a:
        a = matrix_transpose(a)
    return squeeze(matmul(a, expand_dims(b, -1)), [-1])


def trace(x: Any, name: str | None = None) -> Tensor:
    """The sum of the main diagonal of the last two dimensions.

    >>> import stagecraft as tf
    >>> float(tf.linalg.trace([[1.0, 2.0], [3.0, 4.0]]))
    5.0
    """
    return reduce_sum(diag_part(x), axis=-1)


def band_part(input: Any, num_lower: Any, num_upper: Any,  # noqa: A002
              name: str | None = None) -> Tensor:
    """Zeros everything outside the band of ``num_lower`` diagonals below and ``num_upper``
    above the main one (negative: keep the whole triangle).

    >>> import stagecraft as tf
    >>> tf.linalg.band_part(tf.ones([3, 3]), 0, -1).numpy().tolist()
    [[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    x = convert_to_tensor(input)
    rows, cols = x.shape[-2], x.shape[-1]
    if rows is None or cols is None:
        raise ValueError("band_part: the matrix dimensions must be known.")
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    lower, upper = int(num_lower), int(num_upper)
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return where(convert_to_tensor(keep), x, zeros_like(x))


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002
         keepdims: bool = False, name: str | None = None) -> Tensor:
    """The vector norm of ``tensor`` over ``axis`` (all elements when None): ``"euclidean"``
    (2), 1, or ``np.inf``; ``"fro"`` for the Frobenius norm of matrices.

    >>> import stagecraft as tf
    >>> float(tf.norm([3.0, 4.0])), float(tf.norm([3.0, -4.0], ord=1))
    (5.0, 7.0)
    """
    x = convert_to_tensor(tensor)
    if ord in ("euclidean", "fro", 2, 2.0):
        return sqrt(reduce_sum(square(x), axis=axis, keepdims=keepdims))
    if ord in (1, 1.0):
        return reduce_sum(abs(x), axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return reduce_max(abs(x), axis=axis, keepdims=keepdims)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2 or np.inf; got {ord!r}.")


__all__ = ["matmul", "diag", "diag_part", "eye", "matrix_transpose", "matvec", "trace",
           "band_part", "norm", "l2_normalize", "tensordot", "global_norm", "adjoint",
           "cholesky", "cholesky_solve", "det", "eigh", "eigvalsh", "inv", "logdet", "lstsq",
           "matrix_rank", "pinv", "qr", "set_diag", "slogdet", "solve", "svd",
           "triangular_solve", "expm", "lu", "lu_matrix_inverse", "lu_reconstruct", "lu_solve",
           "sqrtm"]
from stagecraft.ops.linalg_ops import eig, eigvals  # noqa: E402

__all__ += ["eig", "eigvals"]
