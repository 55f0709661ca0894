"""``tf.linalg`` decompositions and solvers: wrappers of the primitives of
``ir/ops/decompositions.py`` (inv, det, slogdet, cholesky, qr, svd, eigh, solve,
triangular_solve) and compositions of them (eigvalsh, cholesky_solve, lstsq, logdet, pinv,
matrix_rank, adjoint), all batched over the leading dimensions, with TensorFlow's
argument names, defaults and output conventions. Float32 and float64 only (as TensorFlow's
real kernels); the compositions are differentiated through their primitives.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir.dtypes import as_dtype
from stagecraft.ops.array_ops import expand_dims, eye, gather, shape, transpose, zeros_like
from stagecraft.ops.indexing_ops import argsort
from stagecraft.ops.complex_ops import conj
from stagecraft.ops.array_ops import range as arange
from stagecraft.ops.math_ops import (cast, greater, greater_equal, less_equal, log, matmul,
                                     maximum, reduce_max, reduce_sum, where)


class Slogdet(NamedTuple):
    sign: Tensor
    log_abs_determinant: Tensor


class Qr(NamedTuple):
    q: Tensor
    r: Tensor


class Eigh(NamedTuple):
    e: Tensor
    v: Tensor


def float_matrix(x: Any, fn: str) -> Tensor:
    """``x`` as a tensor of known rank >= 2 (the compositions below need the rank)."""
    x = convert_to_tensor(x)
    if x.shape.rank is None or x.shape.rank < 2:
        raise ValueError(f"tf.linalg.{fn}: expected a matrix or a batch of matrices (rank >= "
                         f"2), got shape {x.shape}.")
    return x


def _static_dims(x: Tensor, fn: str) -> tuple[int, int]:
    m, n = x.shape[-2], x.shape[-1]
    if m is None or n is None:
        raise ValueError(f"tf.linalg.{fn}: the matrix dimensions must be known (got shape "
                         f"{x.shape}); give them in the input_signature (batch dimensions may "
                         f"stay None).")
    return m, n


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swaps the last two dimensions; ``conjugate`` also conjugates complex elements (it
    changes nothing for real dtypes).

    >>> import stagecraft as tf
    >>> tf.linalg.matrix_transpose([[1, 2, 3]]).numpy().tolist()
    [[1], [2], [3]]
    """
    a = convert_to_tensor(a)
    perm = list(range(a.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(conj(a) if conjugate else a, perm)


def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose, for real dtypes).

    >>> import stagecraft as tf
    >>> tf.linalg.adjoint([[1.0, 2.0], [3.0, 4.0]]).numpy().tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    >>> tf.linalg.adjoint([[1 + 2j]]).numpy().tolist()
    [[(1-2j)]]
    """
    return matrix_transpose(matrix, conjugate=True)


def triangle_mask(x: Tensor, lower: bool) -> Any:
    """True on and below (``lower``) or on and above the diagonal of ``x``'s matrices: a
    constant when the matrix dimensions are known, else compared row and column numbers."""
    m, n = x.shape[-2], x.shape[-1]
    if m is not None and n is not None:
        return np.tri(m, n, dtype=bool) if lower else np.tri(n, m, dtype=bool).T
    dims = shape(x)
    rows, cols = expand_dims(arange(dims[-2]), 1), expand_dims(arange(dims[-1]), 0)
    return greater_equal(rows, cols) if lower else less_equal(rows, cols)


def keep_triangle(x: Tensor, lower: bool) -> Tensor:
    """``x`` with the strict upper (``lower``) or strict lower triangle set to zero."""
    return where(triangle_mask(x, lower), x, zeros_like(x))


def _max_dim(a: Tensor) -> Any:
    """max(M, N) of ``a``'s matrices as a float of its dtype (a tensor when unknown)."""
    m, n = a.shape[-2], a.shape[-1]
    if m is not None and n is not None:
        return float(max(m, n))
    dims = shape(a)
    return cast(maximum(dims[-2], dims[-1]), a.dtype)


# --------------------------------------------------------------------------- primitives

def inv(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of each square matrix of ``input`` [..., M, M] (of its transpose with
    ``adjoint``). A singular matrix raises InvalidArgumentError ("Input is not invertible.").

    >>> import stagecraft as tf
    >>> tf.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return bind(OPS["matrix_inverse"], input, adjoint=bool(adjoint))


def det(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The determinant of each square matrix of ``input`` [..., M, M] (shape [...]).

    >>> import stagecraft as tf
    >>> round(float(tf.linalg.det([[1.0, 2.0], [3.0, 4.0]])), 6)
    -2.0
    """
    return bind(OPS["matrix_determinant"], input)


def slogdet(input: Any, name: str | None = None) -> Slogdet:  # noqa: A002
    """``(sign, log_abs_determinant)`` of each square matrix: det = sign * exp(log_abs_det),
    without overflow for large matrices. A singular matrix gives (0, -inf).

    >>> import stagecraft as tf
    >>> sign, logdet = tf.linalg.slogdet([[-2.0, 0.0], [0.0, 4.0]])
    >>> float(sign), round(float(logdet), 6)
    (-1.0, 2.079442)
    """
    return Slogdet(*bind(OPS["log_matrix_determinant"], input))


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The lower-triangular L with L @ L^T = input, for each symmetric positive definite
    matrix; only the lower triangle of ``input`` is read. A matrix that is not positive
    definite raises InvalidArgumentError ("Cholesky decomposition was not successful. The
    input might not be valid.").

    >>> import stagecraft as tf
    >>> tf.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]]).numpy().tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    return bind(OPS["cholesky"], input)


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> Qr:  # noqa: A002
    """``(q, r)`` with input = q @ r for each [M, N] matrix: q [M, P] has orthonormal columns
    and r [P, N] is upper triangular (P = min(M, N)); with ``full_matrices``, q is [M, M] and
    r [M, N]. Signs follow LAPACK's Householder QR.

    >>> import stagecraft as tf
    >>> q, r = tf.linalg.qr([[3.0, 2.0], [4.0, 1.0]])
    >>> abs(r.numpy()).round(4).tolist()
    [[5.0, 2.0], [0.0, 1.0]]
    """
    return Qr(*bind(OPS["qr"], input, full_matrices=bool(full_matrices)))


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Any:
    """The singular value decomposition tensor = u @ diag(s) @ v^T of each [M, N] matrix:
    ``(s, u, v)`` with s [P] descending (P = min(M, N)), u [M, P], v [N, P] (v, not its
    transpose); [M, M] and [N, N] with ``full_matrices``. With ``compute_uv=False`` only s.

    >>> import stagecraft as tf
    >>> tf.linalg.svd([[3.0, 0.0], [0.0, -4.0]], compute_uv=False).numpy().tolist()
    [4.0, 3.0]
    """
    s, u, v = bind(OPS["svd"], tensor, full_matrices=bool(full_matrices))
    return (s, u, v) if compute_uv else s


def eigh(tensor: Any, name: str | None = None) -> Eigh:
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (the columns of v) of each
    self-adjoint matrix; only the lower triangle of ``tensor`` is read.

    >>> import stagecraft as tf
    >>> e, v = tf.linalg.eigh([[2.0, 1.0], [1.0, 2.0]])
    >>> e.numpy().round(6).tolist()
    [1.0, 3.0]
    """
    return Eigh(*bind(OPS["eigh"], tensor))


def eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(e, v)``: the complex eigenvalues and unit-norm eigenvectors (the columns of v) of
    each square matrix, real or complex (complex64 for float32/complex64 input, complex128
    for float64/complex128), in LAPACK's order. Differentiable as in TensorFlow (losses that
    depend on the eigenvectors' arbitrary phases have no well-defined gradient).

    >>> import stagecraft as tf
    >>> e, v = tf.linalg.eig([[0.0, -1.0], [1.0, 0.0]])
    >>> e.dtype, sorted(e.numpy().round(6).tolist(), key=lambda z: z.imag)
    (stagecraft.complex64, [-1j, 1j])
    """
    return tuple(bind(OPS["eig"], tensor))


def eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """The complex eigenvalues of each square matrix (``eig``'s first output).

    >>> import stagecraft as tf
    >>> tf.linalg.eigvals(tf.constant([[2.0, 0.0], [0.0, 3.0]], tf.float64)).numpy().tolist()
    [(2+0j), (3+0j)]
    """
    return bind(OPS["eig"], tensor)[0]


def eigvalsh(tensor: Any, name: str | None = None) -> Tensor:
    """The eigenvalues (ascending) of each self-adjoint matrix (lower triangle read).

    >>> import stagecraft as tf
    >>> tf.linalg.eigvalsh([[2.0, 0.0], [0.0, 1.0]]).numpy().tolist()
    [1.0, 2.0]
    """
    return eigh(tensor).e


def solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """x with matrix @ x = rhs (matrix^T @ x = rhs with ``adjoint``): matrix [..., M, M],
    rhs [..., M, K] with the same batch dimensions. A singular matrix raises
    InvalidArgumentError ("Input matrix is not invertible.").

    >>> import stagecraft as tf
    >>> tf.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [[1.0], [1.0]]).numpy().tolist()
    [[0.5], [0.25]]
    """
    return bind(OPS["matrix_solve"], matrix, rhs, adjoint=bool(adjoint))


def triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Tensor:
    """x with matrix @ x = rhs for triangular matrices, reading only the ``lower`` (else the
    upper) triangle of ``matrix``; ``adjoint`` solves matrix^T @ x = rhs. Batch dimensions
    broadcast. A zero on the diagonal gives inf / nan (not an error), as in TensorFlow.

    >>> import stagecraft as tf
    >>> tf.linalg.triangular_solve([[2.0, 0.0], [1.0, 1.0]], [[2.0], [3.0]]).numpy().tolist()
    [[1.0], [2.0]]
    """
    return bind(OPS["triangular_solve"], matrix, rhs, lower=bool(lower), adjoint=bool(adjoint))


class Lu(NamedTuple):
    lu: Tensor
    p: Tensor


def lu(input: Any, output_idx_type: Any = "int32", name: str | None = None) -> Lu:  # noqa: A002
    """``(lu, p)``: the LU factorization with partial pivoting of each square matrix, L (unit
    diagonal, not stored) below the diagonal of ``lu`` and U on and above it, and the row
    order ``p`` (``output_idx_type``) with L @ U = input[..., p, :]. Singular matrices
    factor without error.

    >>> import stagecraft as tf
    >>> lu, p = tf.linalg.lu([[1.0, 2.0], [4.0, 2.0]])
    >>> lu.numpy().tolist(), p.numpy().tolist()
    ([[4.0, 2.0], [0.25, 1.5]], [1, 0])
    """
    return Lu(*bind(OPS["lu"], input, out_type=as_dtype(output_idx_type)))


def lu_factors(lower_upper: Tensor) -> tuple[Tensor, Tensor]:
    """(L, U) of a packed factorization: L with its unit diagonal, U upper triangular."""
    ident = _eye_like(lower_upper)
    return keep_triangle(lower_upper, lower=True) - lower_upper * ident + ident, \
        keep_triangle(lower_upper, lower=False)


def _eye_like(x: Tensor) -> Any:
    n = x.shape[-1]
    return np.eye(n, dtype=x.dtype.np) if n is not None else eye(shape(x)[-1], dtype=x.dtype)


def _rows(x: Tensor, order: Tensor) -> Tensor:
    """The rows of each matrix of ``x`` in ``order`` (one order per matrix)."""
    return gather(x, order, axis=-2, batch_dims=order.ndim - 1)


def lu_reconstruct(lower_upper: Any, perm: Any, validate_args: bool = False,
                   name: str | None = None) -> Tensor:
    """The matrices whose tf.linalg.lu is (lower_upper, perm).

    >>> import stagecraft as tf
    >>> tf.linalg.lu_reconstruct(*tf.linalg.lu([[1.0, 2.0], [4.0, 2.0]])).numpy().tolist()
    [[1.0, 2.0], [4.0, 2.0]]
    """
    packed = convert_to_tensor(lower_upper)
    low, up = lu_factors(packed)
    return _rows(matmul(low, up), argsort(convert_to_tensor(perm), axis=-1))


def lu_solve(lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False,
             name: str | None = None) -> Tensor:
    """x with A @ x = rhs, given (lower_upper, perm) = tf.linalg.lu(A): the rows of rhs in
    perm's order, then two triangular solves.

    >>> import stagecraft as tf
    >>> lu, p = tf.linalg.lu([[1.0, 2.0], [4.0, 2.0]])
    >>> tf.linalg.lu_solve(lu, p, [[3.0], [6.0]]).numpy().tolist()
    [[1.0], [1.0]]
    """
    packed = convert_to_tensor(lower_upper)
    low, up = lu_factors(packed)
    b = _rows(convert_to_tensor(rhs, dtype=packed.dtype), convert_to_tensor(perm))
    return triangular_solve(up, triangular_solve(low, b, lower=True), lower=False)


def lu_matrix_inverse(lower_upper: Any, perm: Any, validate_args: bool = False,
                      name: str | None = None) -> Tensor:
    """The inverse of A from (lower_upper, perm) = tf.linalg.lu(A).

    >>> import stagecraft as tf
    >>> tf.linalg.lu_matrix_inverse(*tf.linalg.lu([[2.0, 0.0], [0.0, 4.0]])).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    packed = convert_to_tensor(lower_upper)
    return lu_solve(packed, perm, _eye_like(packed) + zeros_like(packed))


# --------------------------------------------------------------------------- compositions

def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """x with A @ x = rhs, given ``chol`` = tf.linalg.cholesky(A): two triangular solves.

    >>> import stagecraft as tf
    >>> chol = tf.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]])
    >>> tf.linalg.cholesky_solve(chol, [[6.0], [4.0]]).numpy().tolist()
    [[1.0], [1.0]]
    """
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """log(det(matrix)) of each symmetric positive definite matrix, from its Cholesky factor
    (2 * sum(log(diag(L)))): no overflow, and an error for a matrix that is not positive
    definite.

    >>> import stagecraft as tf
    >>> round(float(tf.linalg.logdet([[4.0, 2.0], [2.0, 2.0]])), 6)
    1.386294
    """
    chol = cholesky(matrix)
    return 2.0 * reduce_sum(log(bind(OPS["diag_part"], chol)), axis=-1)


def lstsq(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
          name: str | None = None) -> Tensor:
    """The least-squares solution x of matrix @ x ≈ rhs for each [M, N] matrix and [M, K]
    right-hand sides. ``fast`` (the default) solves the regularized normal equations with a
    Cholesky factorization, (A^T A + l2 I) x = A^T b when M >= N and x = A^T (A A^T + l2 I)^-1
    b otherwise, so A must have full rank unless ``l2_regularizer`` > 0. ``fast=False`` gives
    the minimum-norm solution for any rank (through the pseudo-inverse, computed with an SVD)
    and, as in TensorFlow, ignores ``l2_regularizer``.

    >>> import stagecraft as tf
    >>> a = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    >>> tf.linalg.lstsq(a, [[1.0], [1.0], [2.0]]).numpy().round(6).tolist()
    [[1.0], [1.0]]
    """
    a = float_matrix(matrix, "lstsq")
    b = convert_to_tensor(rhs, dtype=a.dtype)
    if not fast:
        return matmul(pinv(a), b)
    m, n = _static_dims(a, "lstsq")
    l2 = cast(convert_to_tensor(l2_regularizer), a.dtype)
    gram = matmul(a, a, transpose_a=m >= n, transpose_b=m < n)
    chol = cholesky(gram + l2 * np.eye(min(m, n), dtype=a.dtype.np))
    if m >= n:
        return cholesky_solve(chol, matmul(a, b, transpose_a=True))
    return matmul(a, cholesky_solve(chol, b), transpose_a=True)


def pinv(a: Any, rcond: Any = None, validate_args: bool = False,
         name: str | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse [..., N, M] of each [M, N] matrix, from its SVD:
    singular values at most ``rcond`` times the largest count as zero (``rcond`` defaults to
    10 * max(M, N) * the dtype's machine epsilon, as in TensorFlow).

    >>> import stagecraft as tf
    >>> tf.linalg.pinv([[2.0, 0.0], [0.0, 0.0]]).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    a = float_matrix(a, "pinv")
    if rcond is None:
        rcond = 10.0 * _max_dim(a) * float(np.finfo(a.dtype.np).eps)
    s, u, v = svd(a, full_matrices=False)
    cutoff = cast(convert_to_tensor(rcond), a.dtype) * reduce_max(s, axis=-1, keepdims=True)
    # 1 / inf = 0 drops the small singular values; the gradient through them is zero too.
    s = where(greater(s, cutoff), s, np.inf * np.ones((), a.dtype.np))
    return matmul(v / expand_dims(s, -2), u, transpose_b=True)


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False,
                name: str | None = None) -> Tensor:
    """The number of singular values above ``tol`` (int32) of each matrix; ``tol`` defaults
    to the largest singular value times max(M, N) times the dtype's machine epsilon.

    >>> import stagecraft as tf
    >>> int(tf.linalg.matrix_rank([[1.0, 2.0], [2.0, 4.0]]))
    1
    """
    a = float_matrix(a, "matrix_rank")
    s = svd(a, compute_uv=False)
    if tol is None:
        eps = float(np.finfo(a.dtype.np).eps)
        tol = reduce_max(s, axis=-1, keepdims=True) * (_max_dim(a) * eps)
    else:
        tol = cast(convert_to_tensor(tol), a.dtype)
        tol = expand_dims(tol, -1) if tol.ndim else tol
    return reduce_sum(cast(greater(s, tol), "int32"), axis=-1)


__all__ = ["inv", "det", "slogdet", "cholesky", "qr", "svd", "eigh", "eigvalsh", "solve",
           "triangular_solve", "cholesky_solve", "logdet", "lstsq", "pinv", "matrix_rank",
           "adjoint", "matrix_transpose", "keep_triangle", "triangle_mask", "lu",
           "lu_reconstruct", "lu_solve", "lu_matrix_inverse", "lu_factors"]
