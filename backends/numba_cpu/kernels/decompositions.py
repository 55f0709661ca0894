"""Kernels of the matrix decompositions and solvers (``ir/ops/decompositions.py``): LAPACK
through Numba's ``np.linalg`` (SciPy's LAPACK), one call per matrix of a batch.

Contract for generated code: every kernel takes C-contiguous 3-D arrays ``(batch, rows,
cols)`` and returns fresh 3-D (matrices), 2-D (vectors) or 1-D (scalars) arrays of the input
dtype, which the lowering reshapes to the op's shape. Failures raise ``ValueError`` with the
reference kernel's message (the executable reports it as InvalidArgumentError); LAPACK's own
exception is caught per matrix and turned into a flag, because Numba cannot raise from an
``except`` block.

* ``inverse3(x, adjoint)``, ``determinant3(x)``, ``slogdet3(x) -> (sign, logdet)``,
  ``cholesky3(x)``, ``eigh3(x) -> (e, v)``;
* ``qr3(x, full_matrices) -> (q, r)``: Numba has only the reduced QR, so the complete one of
  a tall matrix factors the matrix padded with zero columns to a square (the same
  Householder reflectors, then the completed basis);
* ``svd3(x, full_matrices) -> (s, u, v)``;
* ``solve3(a, b, adjoint)`` (equal batches) and ``triangular_solve3(a, b, ia, ib, lower,
  adjoint)`` (broadcast batches through :func:`.linalg.batch_index`'s indices).
"""
from __future__ import annotations

import numba
import numpy as np

from stagecraft.ir.ops import decompositions as ref

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)

# The reference kernels' messages, prefixed with the op's name as staged errors read.
NOT_INVERTIBLE = "matrix_inverse: " + ref.NOT_INVERTIBLE
SOLVE_NOT_INVERTIBLE = "matrix_solve: " + ref.SOLVE_NOT_INVERTIBLE
CHOLESKY_FAILED = "cholesky: " + ref.CHOLESKY_FAILED
EIGH_FAILED = "eigh: " + ref.EIGH_FAILED
SVD_FAILED = "svd: " + ref.SVD_FAILED


@_jit
def inverse3(x, adjoint):
    out = np.empty_like(x)
    ok = True
    for b in range(x.shape[0]):
        try:
            out[b] = np.linalg.inv(np.conj(x[b].T) if adjoint else x[b])  # (conj: complex)
        except Exception:  # noqa: BLE001 - LAPACK's singular-matrix error
            ok = False
    if not ok:
        raise ValueError(NOT_INVERTIBLE)
    return out


@_jit
def determinant3(x):
    out = np.empty(x.shape[0], x.dtype)
    for b in range(x.shape[0]):
        out[b] = np.linalg.det(x[b])
    return out


@_jit
def slogdet3(x):
    sign = np.empty(x.shape[0], x.dtype)
    logdet = np.empty(x.shape[0], x.dtype)
    for b in range(x.shape[0]):
        s, ld = np.linalg.slogdet(x[b])
        sign[b] = s
        logdet[b] = ld
    return sign, logdet


@_jit
def cholesky3(x):
    out = np.empty_like(x)
    ok = True
    for b in range(x.shape[0]):
        try:
            out[b] = np.linalg.cholesky(x[b])
        except Exception:  # noqa: BLE001 - not positive definite
            ok = False
    if not ok:
        raise ValueError(CHOLESKY_FAILED)
    return out


@_jit
def eigh3(x):
    nb, n = x.shape[0], x.shape[1]
    e = np.empty((nb, n), x.dtype)
    v = np.empty_like(x)
    ok = True
    for b in range(nb):
        try:
            eb, vb = np.linalg.eigh(x[b])   # the lower triangle, like the reference
            e[b] = eb
            v[b] = vb
        except Exception:  # noqa: BLE001 - no convergence
            ok = False
    if not ok:
        raise ValueError(EIGH_FAILED)
    return e, v


@_jit
def qr3(x, full_matrices):
    nb, m, n = x.shape
    complete = full_matrices and m > n
    p = m if full_matrices else min(m, n)
    q = np.empty((nb, m, p), x.dtype)
    r = np.empty((nb, p, n), x.dtype)
    for b in range(nb):
        if complete:
            padded = np.zeros((m, m), x.dtype)
            padded[:, :n] = x[b]
            qb, rb = np.linalg.qr(padded)
            q[b] = qb
            r[b] = rb[:, :n]
        else:
            qb, rb = np.linalg.qr(x[b])
            q[b] = qb
            r[b] = rb
    return q, r


@_jit
def svd3(x, full_matrices):
    nb, m, n = x.shape
    p = min(m, n)
    um, vn = (m, n) if full_matrices else (p, p)
    s = np.empty((nb, p), x.dtype)
    u = np.empty((nb, m, um), x.dtype)
    v = np.empty((nb, n, vn), x.dtype)
    ok = True
    for b in range(nb):
        try:
            ub, sb, vhb = np.linalg.svd(x[b], full_matrices)
            s[b] = sb
            u[b] = ub
            v[b] = vhb.T
        except Exception:  # noqa: BLE001 - no convergence
            ok = False
    if not ok:
        raise ValueError(SVD_FAILED)
    return s, u, v


@_jit
def solve3(a, rhs, adjoint):
    out = np.empty_like(rhs)
    ok = True
    for b in range(a.shape[0]):
        try:
            out[b] = np.linalg.solve(np.conj(a[b].T) if adjoint else a[b], rhs[b])
        except Exception:  # noqa: BLE001 - singular
            ok = False
    if not ok:
        raise ValueError(SOLVE_NOT_INVERTIBLE)
    return out


@_jit
def triangular_solve3(a, rhs, ia, ib, lower, adjoint):
    """Substitution, reading one triangle of ``a[ia[t]]`` for right-hand sides ``rhs[ib[t]]``;
    no check of the diagonal (a zero gives inf / nan, as in the reference)."""
    n, k = rhs.shape[1], rhs.shape[2]
    out = np.empty((len(ia), n, k), rhs.dtype)
    forward = lower != adjoint   # op(A) lower triangular: rows top to bottom
    for t in range(len(ia)):
        m = a[ia[t]]
        x = out[t]
        x[:, :] = rhs[ib[t]]
        for step in range(n):
            i = step if forward else n - 1 - step
            lo, hi = (0, i) if forward else (i + 1, n)
            for j in range(lo, hi):
                c = m[j, i] if adjoint else m[i, j]
                for col in range(k):
                    x[i, col] -= c * x[j, col]
            d = m[i, i]
            for col in range(k):
                x[i, col] /= d
    return out


@_jit
def lu3(x, perm_dtype_like):
    """LU with partial pivoting per matrix, as the reference kernel (first largest pivot,
    a zero pivot column left unscaled): (lu, p) with p's dtype that of ``perm_dtype_like``."""
    nb, n = x.shape[0], x.shape[1]
    lu = x.copy()
    perm = np.empty((nb, n), perm_dtype_like.dtype)
    for b in range(nb):
        a = lu[b]
        for i in range(n):
            perm[b, i] = i
        for k in range(n):
            p = k
            for i in range(k + 1, n):
                if abs(a[i, k]) > abs(a[p, k]):
                    p = i
            if p != k:
                for j in range(n):
                    t = a[k, j]
                    a[k, j] = a[p, j]
                    a[p, j] = t
                t2 = perm[b, k]
                perm[b, k] = perm[b, p]
                perm[b, p] = t2
            d = a[k, k]
            for i in range(k + 1, n):
                if d != 0:
                    a[i, k] /= d
                f = a[i, k]
                for j in range(k + 1, n):
                    a[i, j] -= f * a[k, j]
    return lu, perm
