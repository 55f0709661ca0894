"""VJP rules of the matrix decompositions and solvers (``ir/ops/decompositions.py``), the
ones TensorFlow defines, written with stagecraft ops (so they are differentiable again and
stageable). Notation: A the input, G the gradient of an output, X^T the transpose of the last
two dimensions, tril / triu the lower / upper triangle.

* inverse B = A^-1: -B^T G B^T (with ``adjoint``, B = A^-T: -B G^T B).
* det: G det(A) A^-T; slogdet: G_logdet A^-T (the sign is piecewise constant).
* cholesky L: Phi = tril(L^T G) with its diagonal halved, S = L^-T Phi L^-1, and the gradient
  is the symmetric (S + S^T) / 2, as TensorFlow's (a perturbation of A is taken to be
  symmetric, so it is not the derivative with respect to the lower triangle alone).
* qr (M >= N, or any M <= N; not tall with ``full_matrices``, as in TensorFlow), svd (not
  with ``full_matrices`` when |M - N| > 1, as in TensorFlow) and eigh (whose gradient is
  lower-triangular: eigh reads the lower triangle) follow the standard formulas, with
  1 / (x_j - x_i) taken as x / (x^2 + 1e-20) so repeated values give no inf.
* solve / triangular_solve X: G_rhs = solve(op(A)^T, G), G_A = -G_rhs X^T (-X G_rhs^T with
  ``adjoint``), kept to the triangle read for triangular_solve (whose batch dims broadcast).

The rules live in ``RULES`` (a :class:`~stagecraft.autodiff.rule_table.RuleTable`), which
``vjps`` merges into its table.
"""
from __future__ import annotations

import numpy as np

from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import OPS
from stagecraft.ops import linalg_ops as la
from stagecraft.ops.array_ops import concat, expand_dims, eye, gather, shape
from stagecraft.ops.indexing_ops import argsort
from stagecraft.ops.math_ops import matmul as mm
from stagecraft.ops.math_ops import where

RULES = RuleTable()
vjp = RULES.rule


def _sum_to(g, like):
    """``g`` summed over the batch dims that broadcasting added to ``like``'s."""
    same = g.shape.is_fully_defined() and g.shape == like.shape
    return g if same else bind(OPS["sum_like"], g, like)


def _t(x):
    return la.matrix_transpose(x)


def _batch_scalar(g):
    """A per-matrix scalar [...] as [..., 1, 1], to scale matrices."""
    return expand_dims(expand_dims(g, -1), -1)


def _dims(x, op: str) -> tuple[int, int]:
    m, n = x.shape[-2], x.shape[-1]
    if m is None or n is None:
        raise InvalidArgumentError(
            f"The gradient of {op} needs the matrix dimensions, but the input has shape "
            f"{x.shape}; give them in the input_signature (batch dimensions may stay None), "
            f"as TensorFlow requires.")
    return m, n


def _eye(x):
    """The identity matrix of the size of ``x``'s last dimension (known or not)."""
    n = x.shape[-1]
    return np.eye(n, dtype=x.dtype.np) if n is not None else eye(shape(x)[-1], dtype=x.dtype)


def _off_diagonal_reciprocal(x):
    """F[..., i, j] = 1 / (x_j - x_i) off the diagonal (0 on it), safe for repeated values."""
    diff = expand_dims(x, -2) - expand_dims(x, -1)
    return diff / (diff * diff + 1e-20) * (1.0 - _eye(x))


def _half_diagonal(x):
    """``x`` with its diagonal halved."""
    return x * (1.0 - 0.5 * _eye(x))


@vjp("matrix_inverse")
def _inverse(g, out, x, adjoint):
    if adjoint:
        return (-mm(out, mm(g, out, transpose_a=True)),)
    return (-mm(out, mm(g, out, transpose_b=True), transpose_a=True),)


@vjp("matrix_determinant")
def _determinant(g, out, x):
    return (_batch_scalar(g * out) * la.inv(x, adjoint=True),)


@vjp("log_matrix_determinant")
def _slogdet(gs, outs, x):
    return (_batch_scalar(gs[1]) * la.inv(x, adjoint=True),)


@vjp("cholesky")
def _cholesky(g, out, x):
    l_inv = la.triangular_solve(out, _eye(out), lower=True)
    # Phi + Phi^T for P = L^T G: P below the diagonal, P^T above it, P's diagonal on it
    # (matmul's transpose flags give P^T = G^T L without a transpose op)
    sym = where(la.triangle_mask(out, lower=True), mm(out, g, transpose_a=True),
                mm(g, out, transpose_a=True))
    return (0.5 * mm(mm(l_inv, sym, transpose_a=True), l_inv),)


def _antisymmetric(a, b):
    """a^T b - b^T a (two products instead of a transpose)."""
    return mm(a, b, transpose_a=True) - mm(b, a, transpose_a=True)


def _qr_square_or_tall(q, r, gq, gr):
    low = la.keep_triangle(_antisymmetric(q, gq) + mm(r, gr, transpose_b=True)
                           - mm(gr, r, transpose_b=True), lower=True)
    # Q gR + (Q low + gQ - Q Q^T gQ) R^-T, the last factor by one triangular solve
    rest = mm(q, low - mm(q, gq, transpose_a=True)) + gq
    return mm(q, gr) + _t(la.triangular_solve(r, _t(rest), lower=False))


@vjp("qr")
def _qr(gs, outs, x, full_matrices):
    q, r = outs
    gq, gr = gs
    m, n = _dims(x, "qr")
    if m > n and full_matrices:
        raise InvalidArgumentError(
            f"The gradient of qr with full_matrices=True is not defined for a tall matrix "
            f"({m}x{n}: the last {m - n} columns of q are not unique); use "
            f"full_matrices=False, as TensorFlow requires.")
    if m >= n:
        return (_qr_square_or_tall(q, r, gq, gr),)
    # Wide: A = [X, Y] with X square, R = [U, V]; X = Q U is the square case, Y = Q V.
    y, u = x[..., :, m:], r[..., :, :m]
    gu, gv = gr[..., :, :m], gr[..., :, m:]
    gx = _qr_square_or_tall(q, u, gq + mm(y, gv, transpose_b=True), gu)
    return (concat([gx, mm(q, gv)], axis=-1),)


def _columns(x, k: int):
    """The first ``k`` columns of ``x`` (``x`` itself when it has ``k``)."""
    return x if x.shape[-1] == k else x[..., :, :k]


@vjp("svd")
def _svd(gs, outs, x, full_matrices):
    s, u, v = outs
    g_s, g_u, g_v = gs
    m, n = _dims(x, "svd")
    tall = m > n
    if tall:   # work on A^T = V S U^T (wide) and transpose the result
        m, n, u, v, g_u, g_v = n, m, v, u, g_v, g_u
    if full_matrices and n - m > 1:
        raise InvalidArgumentError(
            f"The gradient of svd with full_matrices=True is defined only when the matrix "
            f"dimensions differ by at most 1 (got {m} and {n}: the extra singular vectors "
            f"are not unique), as in TensorFlow; use full_matrices=False.")
    f = _off_diagonal_reciprocal(s * s)   # antisymmetric: (F * X)^T = -F * X^T
    v1, g_v1 = _columns(v, m), _columns(g_v, m)
    # diag(gS) + (Fu + Fu^T) S + S (Fv + Fv^T), with Fu = F * U^T gU (likewise Fv)
    inner = (bind(OPS["diag"], g_s) + f * _antisymmetric(u, g_u) * expand_dims(s, -2)
             + expand_dims(s, -1) * (f * _antisymmetric(v1, g_v1)))
    if tall:   # the transpose of U inner V1^T
        grad = mm(mm(v1, inner, transpose_b=True), u, transpose_b=True)
    else:
        grad = mm(mm(u, inner), v1, transpose_b=True)
    if m != n:
        # (I - V1 V1^T) gV1 [- V2 gV2^T V1], scaled by S^-1 U^T (transposed when tall)
        rest = g_v1 - mm(v1, mm(v1, g_v1, transpose_a=True))
        if full_matrices:
            v2, g_v2 = v[..., :, m:n], g_v[..., :, m:n]
            rest = rest - mm(v2, mm(g_v2, v1, transpose_a=True))
        us = u * expand_dims(s / (s * s + 1e-20), -2)
        grad = grad + (mm(rest, us, transpose_b=True) if tall else
                       mm(us, rest, transpose_b=True))
    return (grad,)


@vjp("eigh")
def _eigh(gs, outs, x):
    e, v = outs
    g_e, g_v = gs
    f = _off_diagonal_reciprocal(e)   # antisymmetric
    # G + G^T for G = V (diag(gE) + F * V^T gV) V^T
    inner = 2.0 * bind(OPS["diag"], g_e) + f * _antisymmetric(v, g_v)
    full = mm(mm(v, inner), v, transpose_b=True)
    # eigh reads the lower triangle: fold the symmetric gradient onto it
    return (_half_diagonal(la.keep_triangle(full, lower=True)),)


@vjp("lu")
def _lu(gs, outs, x, out_type):
    # L U = A[p]: gA[p] = L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T, gL / gU the parts of
    # the gradient below / on and above the diagonal (L's unit diagonal is not an output).
    packed, perm = outs
    g = gs[0]
    low, up = la.lu_factors(packed)
    g_up = la.keep_triangle(g, lower=False)
    g_low = g - g_up
    ltg = mm(low, g_low, transpose_a=True)
    middle = (la.keep_triangle(ltg, lower=True) - ltg * _eye(ltg)
              + la.keep_triangle(mm(g_up, up, transpose_b=True), lower=False))
    y = la.triangular_solve(low, middle, lower=True, adjoint=True)
    g_rows = _t(la.triangular_solve(up, _t(y), lower=False))
    return (gather(g_rows, argsort(perm, axis=-1), axis=-2, batch_dims=perm.ndim - 1),)


def _solve_grads(g, out, adjoint, solve_t):
    g_rhs = solve_t(g)
    g_a = -mm(out, g_rhs, transpose_b=True) if adjoint else -mm(g_rhs, out, transpose_b=True)
    return g_a, g_rhs


@vjp("matrix_solve")
def _solve(g, out, matrix, rhs, adjoint):
    return _solve_grads(g, out, adjoint, lambda y: la.solve(matrix, y, adjoint=not adjoint))


@vjp("triangular_solve")
def _triangular_solve(g, out, matrix, rhs, lower, adjoint):
    g_a, g_rhs = _solve_grads(g, out, adjoint, lambda y: la.triangular_solve(
        matrix, y, lower=lower, adjoint=not adjoint))
    return _sum_to(la.keep_triangle(g_a, lower), matrix), _sum_to(g_rhs, rhs)
