"""Matrix decompositions and solvers on the device (``ir/ops/decompositions.py``).

One thread per matrix (the matrices of these programs are small; a batch spreads over the
grid): an LU factorization with partial pivoting (LAPACK's getrf, so the same pivots as the
reference) for ``matrix_inverse``, ``matrix_determinant``, ``log_matrix_determinant`` and
``matrix_solve``; a Cholesky factorization; substitution for ``triangular_solve``. The error
checks read one flag per matrix on the host (singular / not positive definite).

``qr``, ``svd`` and ``eigh`` are a documented host round trip: the batch is copied to the
host, factored by the reference kernels (LAPACK) and the factors copied back, so the results
are the reference's exactly (iterative eigen-solvers per thread would be slower than the
copies for the sizes that fit one thread).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.kernels.shape import copy_view
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.ir.ops import decompositions as ref

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


# ------------------------------------------------------------------------------- LU

@functools.lru_cache(maxsize=None)
def _lu_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def lu(work, piv, sign, ok, a, n, transpose):
        """Copies matrix b of ``a`` (transposed with ``transpose``) into ``work`` and factors
        it in place: unit-lower L below the diagonal, U on and above, row swaps in ``piv``."""
        for b in range(cuda.grid(1), sign.size, cuda.gridsize(1)):
            base = b * n * n
            for i in range(n):
                for j in range(n):
                    work[base + i * n + j] = a[base + (j * n + i if transpose else i * n + j)]
            s = 1.0
            good = 1
            for k in range(n):
                p = k
                best = abs(work[base + k * n + k])
                for i in range(k + 1, n):
                    v = abs(work[base + i * n + k])
                    if v > best:
                        best = v
                        p = i
                piv[b * n + k] = p
                if best == 0:
                    good = 0
                    continue
                if p != k:
                    s = -s
                    for j in range(n):
                        t = work[base + k * n + j]
                        work[base + k * n + j] = work[base + p * n + j]
                        work[base + p * n + j] = t
                d = work[base + k * n + k]
                for i in range(k + 1, n):
                    f = work[base + i * n + k] / d
                    work[base + i * n + k] = f
                    for j in range(k + 1, n):
                        work[base + i * n + j] -= f * work[base + k * n + j]
            sign[b] = s
            ok[b] = good
    return lu


def _lu(x: Any, transpose: bool = False) -> tuple:
    """(work, piv, sign, ok) of the LU factorization of every matrix of device array ``x``."""
    n = int(tuple(x.shape)[-1])
    nb = int(np.prod(tuple(x.shape)[:-2], dtype=np.int64))
    work = memory.empty(tuple(x.shape), x.dtype)
    piv = memory.empty((nb * n,), np.int32)
    sign = memory.empty((nb,), x.dtype)
    ok = memory.empty((nb,), np.int32)
    launch_over(_lu_kernel(), nb, work, piv, sign, ok, x, n, bool(transpose))
    return work, piv, sign, ok


def _check(ok: Any, message: str) -> None:
    """Raises ``message`` when a matrix failed (one flag per matrix read on the host)."""
    if ok.size and not memory.to_host(ok).all():
        raise ValueError(message)


@functools.lru_cache(maxsize=None)
def _det_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def det(out_sign, out_value, work, sign, n, log):
        """The determinant (``log``: sign and log |det|) from the LU factors."""
        for b in range(cuda.grid(1), sign.size, cuda.gridsize(1)):
            base = b * n * n
            s = sign[b]
            acc = 0.0 if log else 1.0
            for k in range(n):
                d = work[base + k * n + k]
                if log:
                    if d < 0:
                        s = -s
                    elif d == 0:
                        s = 0.0
                    acc += math.log(abs(d)) if d != 0 else -math.inf
                else:
                    acc *= d
            out_sign[b] = s
            out_value[b] = acc if log else s * acc
    return det


@functools.lru_cache(maxsize=None)
def _lu_solve_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def solve(x, work, piv, n, k, identity):
        """Overwrites the right-hand sides ``x`` of matrix b ([n, k]; the identity with
        ``identity``) with the solution: row swaps, forward then back substitution."""
        for b in range(cuda.grid(1), x.size // max(n * k, 1), cuda.gridsize(1)):
            base = b * n * n
            xb = b * n * k
            if identity:
                for i in range(n):
                    for c in range(k):
                        x[xb + i * k + c] = 1.0 if i == c else 0.0
            for r in range(n):
                p = piv[b * n + r]
                if p != r:
                    for c in range(k):
                        t = x[xb + r * k + c]
                        x[xb + r * k + c] = x[xb + p * k + c]
                        x[xb + p * k + c] = t
            for i in range(n):
                for j in range(i):
                    f = work[base + i * n + j]
                    for c in range(k):
                        x[xb + i * k + c] -= f * x[xb + j * k + c]
            for i in range(n - 1, -1, -1):
                for j in range(i + 1, n):
                    f = work[base + i * n + j]
                    for c in range(k):
                        x[xb + i * k + c] -= f * x[xb + j * k + c]
                d = work[base + i * n + i]
                for c in range(k):
                    x[xb + i * k + c] /= d
    return solve


def inverse(x: Any, adjoint: bool) -> Any:
    """``matrix_inverse``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(inverse(to_device(np.array([[2.0, 0.0], [1.0, 1.0]])), False)).tolist()
    [[0.5, 0.0], [-0.5, 1.0]]
    """
    work, piv, _, ok = _lu(x, adjoint)
    _check(ok, ref.NOT_INVERTIBLE)
    out = memory.empty(tuple(x.shape), x.dtype)
    n = int(tuple(x.shape)[-1])
    launch_over(_lu_solve_kernel(), ok.size, out, work, piv, n, n, True)
    return out


def solve(a: Any, rhs: Any, adjoint: bool) -> Any:
    """``matrix_solve`` (equal batch dimensions, checked by the op's inference).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = to_device(np.array([[2.0, 0.0], [0.0, 4.0]]))
    >>> to_host(solve(a, to_device(np.array([[1.0], [1.0]])), False)).tolist()
    [[0.5], [0.25]]
    """
    work, piv, _, ok = _lu(a, adjoint)
    _check(ok, ref.SOLVE_NOT_INVERTIBLE)
    out = copy_view(rhs, lambda v: v)
    launch_over(_lu_solve_kernel(), ok.size, out, work, piv, int(tuple(a.shape)[-1]),
                int(tuple(rhs.shape)[-1]), False)
    return out


def determinant(x: Any, log: bool) -> Any:
    """``matrix_determinant`` (``log``: ``log_matrix_determinant``'s (sign, log |det|)).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> float(to_host(determinant(to_device(np.array([[1.0, 2.0], [3.0, 4.0]])), False)))
    -2.0
    """
    work, _, sign, ok = _lu(x)
    out_sign = memory.empty(tuple(tuple(x.shape)[:-2]), x.dtype)
    value = memory.empty(tuple(tuple(x.shape)[:-2]), x.dtype)
    launch_over(_det_kernel(), ok.size, out_sign, value, work, sign, int(tuple(x.shape)[-1]),
                bool(log))
    return (out_sign, value) if log else value


@functools.lru_cache(maxsize=None)
def _permutation_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def permutation(perm, piv, n):
        """The row order of matrix b from its row swaps (``piv``)."""
        for b in range(cuda.grid(1), perm.size // max(n, 1), cuda.gridsize(1)):
            for i in range(n):
                perm[b * n + i] = i
            for k in range(n):
                p = piv[b * n + k]
                if p != k:
                    t = perm[b * n + k]
                    perm[b * n + k] = perm[b * n + p]
                    perm[b * n + p] = t
    return permutation


def lu(x: Any, out_type: np.dtype) -> tuple:
    """``lu``: the factors and the row order (singular matrices factor without error).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> f, p = lu(to_device(np.array([[1.0, 2.0], [4.0, 2.0]])), np.dtype(np.int32))
    >>> to_host(f).tolist(), to_host(p).tolist()
    ([[4.0, 2.0], [0.25, 1.5]], [1, 0])
    """
    work, piv, sign, _ = _lu(x)
    perm = memory.empty(tuple(x.shape)[:-1], out_type)
    launch_over(_permutation_kernel(), sign.size, perm, piv, int(tuple(x.shape)[-1]))
    return work, perm


# ------------------------------------------------------------------------- Cholesky

@functools.lru_cache(maxsize=None)
def _cholesky_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def chol(out, ok, a, n):
        """L of matrix b from the lower triangle of ``a``; zeros above the diagonal."""
        for b in range(cuda.grid(1), ok.size, cuda.gridsize(1)):
            base = b * n * n
            good = 1
            for j in range(n):
                for i in range(j):
                    out[base + i * n + j] = 0.0
                s = a[base + j * n + j]
                for k in range(j):
                    s -= out[base + j * n + k] * out[base + j * n + k]
                if not s > 0:
                    good = 0
                    s = 1.0   # keeps going without NaNs; the result is refused below
                d = math.sqrt(s)
                out[base + j * n + j] = d
                for i in range(j + 1, n):
                    t = a[base + i * n + j]
                    for k in range(j):
                        t -= out[base + i * n + k] * out[base + j * n + k]
                    out[base + i * n + j] = t / d
            ok[b] = good
    return chol


def cholesky(x: Any) -> Any:
    """``cholesky``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(cholesky(to_device(np.array([[4.0, 2.0], [2.0, 2.0]])))).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    nb = int(np.prod(tuple(x.shape)[:-2], dtype=np.int64))
    out = memory.empty(tuple(x.shape), x.dtype)
    ok = memory.empty((nb,), np.int32)
    launch_over(_cholesky_kernel(), nb, out, ok, x, int(tuple(x.shape)[-1]))
    _check(ok, ref.CHOLESKY_FAILED)
    return out


# ----------------------------------------------------------------- triangular solves

@functools.lru_cache(maxsize=None)
def _triangular_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def trsv(x, a, rhs, ia, ib, n, k, lower, adjoint):
        """Output matrix t: op(a[ia[t]]) x = rhs[ib[t]] by substitution over one triangle."""
        forward = lower != adjoint
        for t in range(cuda.grid(1), ia.size, cuda.gridsize(1)):
            ab = ia[t] * n * n
            rb = ib[t] * n * k
            xb = t * n * k
            for step in range(n):
                i = step if forward else n - 1 - step
                lo = 0 if forward else i + 1
                hi = i if forward else n
                for c in range(k):
                    acc = rhs[rb + i * k + c]
                    for j in range(lo, hi):
                        m = a[ab + j * n + i] if adjoint else a[ab + i * n + j]
                        acc -= m * x[xb + j * k + c]
                    x[xb + i * k + c] = acc / a[ab + i * n + i]
    return trsv


def _batch_indices(own: tuple, batch: tuple) -> np.ndarray:
    """For each matrix of the broadcast ``batch``, the index of its matrix in a batch of
    shape ``own`` (host integers, from the shapes alone)."""
    count = int(np.prod(own, dtype=np.int64))
    return np.broadcast_to(np.arange(count, dtype=np.int64).reshape(own), batch).ravel()


def triangular_solve(a: Any, rhs: Any, lower: bool, adjoint: bool, out_shape: tuple) -> Any:
    """``triangular_solve``; batch dimensions broadcast through per-output index arrays
    computed from the shapes on the host (no device data is read).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = to_device(np.array([[2.0, 0.0], [1.0, 1.0]]))
    >>> to_host(triangular_solve(a, to_device(np.array([[2.0], [3.0]])), True, False,
    ...                          (2, 1))).tolist()
    [[1.0], [2.0]]
    """
    batch = tuple(out_shape[:-2])
    ia, ib = (_batch_indices(tuple(x.shape)[:-2], batch) for x in (a, rhs))
    out = memory.empty(tuple(out_shape), a.dtype)
    n, k = int(tuple(a.shape)[-1]), int(tuple(rhs.shape)[-1])
    launch_over(_triangular_kernel(), ia.size, out, a, rhs, memory.to_device(ia),
                memory.to_device(ib), n, k, bool(lower), bool(adjoint))
    return out


# --------------------------------------------------------------- host round trips

def on_host(kernel: Callable, xs: list, **attrs: Any) -> Any:
    """Runs the reference ``kernel`` on host copies of ``xs`` and copies its results back
    (one device array, or a tuple of them)."""
    out = kernel(*[memory.to_host(x) for x in xs], **attrs)
    if isinstance(out, tuple):
        return tuple(memory.to_device(o) for o in out)
    return memory.to_device(out)
