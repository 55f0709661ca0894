"""Matmul (2-D and batched with broadcast batch dimensions), diag and diag_part kernels.

Contract for generated code (the plain-Python ``run_*`` adapters at the bottom show it):

* 2-D: ``K.matmul2(a, b, transpose_a, transpose_b)`` with 2-D arrays of one dtype (C- or
  F-contiguous; generated code should pass C-contiguous ones to keep one specialization)
  and runtime booleans; returns a fresh C-contiguous ``(m, n)`` array of the input dtype.
  Floats go through BLAS (``np.dot``; needs SciPy), integers through a loop that wraps like
  NumPy's fixed-width matmul.
* Batched: at compile time :func:`matmul_plan` ``(a_shape, b_shape, transpose_a,
  transpose_b) -> (a_bshape, b_bshape, a3_shape, b3_shape, out3_shape, out_shape)``; emit
  ``ia, ib = K.batch_index(a_bshape, b_bshape)`` (padded batch shapes, same length >= 1),
  ``out3 = K.batch_matmul3(a.reshape(a3_shape), b.reshape(b3_shape), ia, ib, ta, tb)``
  (C-contiguous inputs), then ``out3.reshape(out_shape)``.
* ``K.diag2(x.reshape(-1, n)).reshape(x.shape + (n,))`` and
  ``K.diag_part3(x.reshape(-1, m, n)).reshape(x.shape[:-2] + (min(m, n),))``.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


# --------------------------------------------------------------------------- 2-D matmul

def _mm2(a, b, transpose_a, transpose_b):  # pragma: no cover - typed by the overload
    raise TypeError("_mm2 is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


def _mm2_blas(a, b, transpose_a, transpose_b):
    if transpose_a:
        if transpose_b:
            return np.dot(a.T, b.T)
        return np.dot(a.T, b)
    if transpose_b:
        return np.dot(a, b.T)
    return np.dot(a, b)


def _mm2_loop(a, b, transpose_a, transpose_b):
    m = a.shape[1] if transpose_a else a.shape[0]
    kk = a.shape[0] if transpose_a else a.shape[1]
    n = b.shape[0] if transpose_b else b.shape[1]
    out = np.zeros((m, n), a.dtype)
    for i in range(m):
        for p in range(kk):
            av = a[p, i] if transpose_a else a[i, p]
            if transpose_b:
                for j in range(n):
                    out[i, j] += av * b[j, p]
            else:
                for j in range(n):
                    out[i, j] += av * b[p, j]
    return out


@overload(_mm2)
def _ol_mm2(a, b, transpose_a, transpose_b):
    if isinstance(a.dtype, types.Float) and a.dtype == b.dtype:
        return _mm2_blas
    return _mm2_loop


@_jit
def matmul2(a, b, transpose_a, transpose_b):
    """``op(a) @ op(b)`` for 2-D arrays of one dtype; ``op`` transposes when asked."""
    ka = a.shape[0] if transpose_a else a.shape[1]
    kb = b.shape[1] if transpose_b else b.shape[0]
    if ka != kb:
        raise ValueError("matmul: inner dimensions do not match")
    return _mm2(a, b, transpose_a, transpose_b)


# --------------------------------------------------------------------------- batched matmul

@_jit
def batch_index(a_bshape, b_bshape):
    """Flat batch indices into ``a`` and ``b`` for each element of the broadcast batch
    (row-major).  Both tuples have the same length (>= 1), padded with leading 1s."""
    nd = len(a_bshape)
    total = 1
    for d in range(nd):
        total *= b_bshape[d] if a_bshape[d] == 1 else a_bshape[d]  # 0 beats 1
    ia = np.zeros(total, np.int64)
    ib = np.zeros(total, np.int64)
    for t in range(total):
        rem = t
        offa = 0
        offb = 0
        stra = 1
        strb = 1
        for dd in range(nd):
            d = nd - 1 - dd
            sa = a_bshape[d]
            sb = b_bshape[d]
            od = sb if sa == 1 else sa
            idx = rem % od
            rem //= od
            if sa != 1:
                offa += idx * stra
            if sb != 1:
                offb += idx * strb
            stra *= sa
            strb *= sb
        ia[t] = offa
        ib[t] = offb
    return ia, ib


@_jit
def batch_matmul3(a3, b3, ia, ib, transpose_a, transpose_b):
    """``out3[t] = op(a3[ia[t]]) @ op(b3[ib[t]])`` for C-contiguous 3-D ``a3``/``b3`` of one
    dtype; returns a C-contiguous ``(len(ia), m, n)`` array of that dtype."""
    m = a3.shape[2] if transpose_a else a3.shape[1]
    n = b3.shape[1] if transpose_b else b3.shape[2]
    nb = ia.shape[0]
    out = np.empty((nb, m, n), a3.dtype)
    for t in range(nb):
        out[t] = matmul2(a3[ia[t]], b3[ib[t]], transpose_a, transpose_b)
    return out


def matmul_plan(a_shape, b_shape, transpose_a: bool, transpose_b: bool):
    """Static bookkeeping for a batched matmul (both ranks >= 2).

    Returns ``(a_bshape, b_bshape, a3_shape, b3_shape, out3_shape, out_shape)``: the batch
    shapes padded with leading 1s to one length (>= 1), for :func:`batch_index`; the 3-D
    shapes to reshape the (C-contiguous) inputs to; the kernel's output shape and the final
    shape.  Raises ``ValueError`` when the batch dimensions do not broadcast."""
    a_shape, b_shape = tuple(map(int, a_shape)), tuple(map(int, b_shape))
    ab, bb = a_shape[:-2], b_shape[:-2]
    nd = max(len(ab), len(bb), 1)
    ab = (1,) * (nd - len(ab)) + ab
    bb = (1,) * (nd - len(bb)) + bb
    batch = []
    for x, y in zip(ab, bb):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"batch dimensions {a_shape[:-2]} and {b_shape[:-2]} do not "
                             f"broadcast")
        batch.append(y if x == 1 else x)
    m = a_shape[-1] if transpose_a else a_shape[-2]
    n = b_shape[-2] if transpose_b else b_shape[-1]
    nbatch = math.prod(batch)
    r = max(len(a_shape), len(b_shape)) - 2   # rank of the broadcast batch
    out_batch = tuple(batch[nd - r:])
    return (ab, bb, (math.prod(ab),) + a_shape[-2:], (math.prod(bb),) + b_shape[-2:],
            (nbatch, m, n), out_batch + (m, n))


# --------------------------------------------------------------------------- diagonals

@_jit
def diag2(x2):
    """``(B, n) -> (B, n, n)`` matrices with ``x2[b]`` on the diagonal, zeros elsewhere."""
    nb, n = x2.shape
    out = np.zeros((nb, n, n), x2.dtype)
    for b in range(nb):
        for i in range(n):
            out[b, i, i] = x2[b, i]
    return out


@_jit
def diag_part3(x3):
    """``(B, m, n) -> (B, min(m, n))`` main diagonals."""
    nb, m, n = x3.shape
    k = min(m, n)
    out = np.empty((nb, k), x3.dtype)
    for b in range(nb):
        for i in range(k):
            out[b, i] = x3[b, i, i]
    return out


# --------------------------------------------------------------------------- adapters
# Plain Python: what generated code does, for tests and the eager path.  Not a hot path.

def run_matmul(a, b, transpose_a: bool, transpose_b: bool):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    ta, tb = bool(transpose_a), bool(transpose_b)
    if a.ndim == 2 and b.ndim == 2:
        return matmul2(a, b, ta, tb)
    ab, bb, a3s, b3s, _, out_shape = matmul_plan(a.shape, b.shape, ta, tb)
    ia, ib = batch_index(ab, bb)
    return batch_matmul3(a.reshape(a3s), b.reshape(b3s), ia, ib, ta, tb).reshape(out_shape)


def run_diag(x):
    x = np.ascontiguousarray(x)
    n = x.shape[-1]
    return diag2(x.reshape(-1, n)).reshape(x.shape + (n,))


def run_diag_part(x):
    x = np.ascontiguousarray(x)
    m, n = x.shape[-2:]
    return diag_part3(x.reshape(-1, m, n)).reshape(x.shape[:-2] + (min(m, n),))
