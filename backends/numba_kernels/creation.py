"""Numba kernels for the creation ops of ``ir/ops/creation.py`` (fill, range, eye,
where_indices) and the object-mode lowering of the random ops (``ir/ops/random.py``).

Contract: rank-0 IR values are passed as 0-d arrays; ``out`` arrays are preallocated by the
caller with the exact IR dtype and shape and must be C-contiguous. ``range`` and
``where_indices`` have data-dependent lengths: ``range_len`` gives the length (the caller
allocates ``np.empty(n, dtype)``), ``where_indices`` allocates and returns its int64 result.

Random ops: Numba cannot reproduce NumPy's ``Generator(Philox)`` streams (its own
``np.random`` is a different, global, Mersenne-Twister state), so on this backend the random
ops **must** be lowered as an object-mode call of the reference kernel:
``K.random_into(kind, out, s0, s1, s2, lo, hi)`` with ``kind`` one of ``RANDOM_NORMAL``,
``RANDOM_UNIFORM``, ``RANDOM_UNIFORM_INT``, the op's ``seed`` triple baked in as int literals,
and ``lo``/``hi`` the int64 minval/maxval (ignored for the float kinds). It costs an object
mode transition (a few microseconds) per call; the values equal the reference bit for bit.
"""
from __future__ import annotations

import math

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", nogil=True)


@numba.njit(**_JIT)
def empty(shape, dtype):
    """``np.empty(shape, dtype)``. Generated code allocates through this kernel, which is
    compiled once per rank and dtype and cached on disk, instead of having Numba compile
    NumPy's allocation again inside every new graph function."""
    return np.empty(shape, dtype)


@numba.njit(**_JIT)
def fill_into(value, out):
    """out[...] = value (a 0-d array of out's dtype)."""
    v = value[()]
    of = out.reshape(out.size)
    for j in range(of.size):
        of[j] = v


@numba.njit(**_JIT)
def eye_into(out):
    """out = np.eye(rows, cols, dtype=out.dtype) for a 2-D ``out``."""
    out[...] = 0
    for i in range(min(out.shape[0], out.shape[1])):
        out[i, i] = 1


@numba.njit(**_JIT)
def range_len(start, limit, delta):
    """Length of ``np.arange(start, limit, delta)`` for 0-d arrays of one dtype (NumPy's
    ceil((limit - start) / delta), computed in the dtype for floats, in float64 for ints).
    Raises ValueError for delta == 0, like the reference kernel."""
    s = start[()]
    d = delta[()]
    if d == 0:
        raise ValueError("Requires delta != 0")
    q = (limit[()] - s) / d  # float32 / float32 stays float32 in Numba, ints give float64
    n = math.ceil(q)
    return max(np.int64(n), np.int64(0))


@numba.njit(**_JIT)
def range_into(start, delta, out):
    """out (1-D, length ``range_len``) = np.arange(start, ., delta, dtype=out.dtype): NumPy's
    fill: out[0] = start, out[1] = start + delta, then start + i * (out[1] - out[0]), in the
    dtype."""
    n = out.size
    if n == 0:
        return
    out[0] = start[()]
    if n == 1:
        return
    out[1] = start[()] + delta[()]
    s = out[0]
    d = out[1] - out[0]
    ti = out[:1].copy()  # i converted to the dtype (C: start + i*delta in the dtype)
    for i in range(2, n):
        ti[0] = i
        out[i] = s + ti[0] * d


@numba.njit(**_JIT)
def where_indices(cond):
    """np.argwhere(cond).astype(np.int64): (count, cond.ndim) coordinates of non-zero
    elements in C order."""
    nd = cond.ndim
    cf = cond.reshape(cond.size)
    count = 0
    for j in range(cf.size):
        if cf[j] != 0:
            count += 1
    out = np.empty((count, nd), np.int64)
    r = 0
    for j in range(cf.size):
        if cf[j] != 0:
            rem = j
            for d in range(nd - 1, -1, -1):
                out[r, d] = rem % cond.shape[d]
                rem //= cond.shape[d]
            r += 1
    return out


# ----------------------------------------------------------------------------- random

RANDOM_NORMAL, RANDOM_UNIFORM, RANDOM_UNIFORM_INT = 0, 1, 2
_RANDOM_OPS = ("random_normal", "random_uniform", "random_uniform_int")


def _random_fill(kind, out, s0, s1, s2, lo, hi):
    """Plain Python (runs in object mode): fills ``out`` with the reference kernel's values."""
    from stagecraft.ir import OPS
    from stagecraft.ir import dtypes as dt
    op = OPS[_RANDOM_OPS[kind]]
    seed = (int(s0), int(s1), int(s2))
    if kind == RANDOM_UNIFORM_INT:
        vals = op.kernel(np.asarray(lo, out.dtype), np.asarray(hi, out.dtype), out.shape, seed)
    else:
        vals = op.kernel(out.shape, dt.from_numpy(out.dtype), seed)
    out[...] = vals


@numba.njit(cache=True, error_model="numpy")  # no nogil: object mode holds the GIL anyway
def random_into(kind, out, s0, s1, s2, lo, hi):
    """Object-mode call of the reference random kernel (see the module doc) into ``out``."""
    with numba.objmode():
        _random_fill(kind, out, s0, s1, s2, lo, hi)
