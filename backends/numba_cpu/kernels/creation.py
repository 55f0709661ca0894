"""Numba kernels for the creation ops of ``ir/ops/creation.py`` (fill, range, eye,
where_indices) and the random ops (``ir/ops/random.py``).

Contract: rank-0 IR values are passed as 0-d arrays; ``out`` arrays are preallocated by the
caller with the exact IR dtype and shape and must be C-contiguous. ``range`` and
``where_indices`` have data-dependent lengths: ``range_len`` gives the length (the caller
allocates ``np.empty(n, dtype)``), ``where_indices`` allocates and returns its int64 result.

Random ops: ``random_into(kind, out, seed, low, span)`` computes the op table's Philox
stream (``ir/ops/philox.py``, whose ``philox`` it compiles) from the int64 seed triple, in
nopython mode; ``kind`` is one of philox's NORMAL, UNIFORM, UNIFORM_INT, TRUNCATED_NORMAL.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from stagecraft.ir.ops import philox
from stagecraft.ir.ops.philox import (INV_2_24, INV_2_53, ATTEMPT_SHIFT, MASK, TRUNCATE_AT, TWO_PI,
                                      UNIFORM, UNIFORM_INT, TRUNCATED_NORMAL)

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

_philox = numba.njit(cache=True, inline="always")(philox.philox)
_key_words = numba.njit(cache=True)(philox.key_words)


@numba.njit(**_JIT)
def _normal_pair(x, y):
    u1 = ((x >> np.uint64(11)) + np.uint64(1)) * INV_2_53  # (0, 1]: log(u1) is finite
    u2 = (y >> np.uint64(11)) * INV_2_53
    r = math.sqrt(-2.0 * math.log(u1))
    return r * math.cos(TWO_PI * u2), r * math.sin(TWO_PI * u2)


@numba.njit(**_JIT)
def _draws(g, k0, k1, c2, c3):
    w0, w1, w2, w3 = _philox(g & np.uint64(MASK), g >> np.uint64(32), c2, c3, k0, k1)
    return (w0 << np.uint64(32)) | w1, (w2 << np.uint64(32)) | w3


@numba.njit(**_JIT)
def _truncated(z, position, g, k0, k1, c2, c3):
    """``z`` (element ``position`` of pair ``g``), redrawn until ``|z| <= TRUNCATE_AT``."""
    attempt = 1
    while abs(z) > TRUNCATE_AT:
        z = _normal_pair(*_draws(g, k0, k1, c2, c3 | np.uint64(attempt << ATTEMPT_SHIFT)))[position]
        attempt += 1
    return z


@numba.njit(**_JIT)
def random_into(kind, out, seed, low, high):
    """Fills ``out`` with the Philox stream of ``seed`` (an int64 triple) as ``kind`` (see
    ``ir/ops/philox.py``: NORMAL, UNIFORM, UNIFORM_INT in ``[low, high)``, TRUNCATED_NORMAL):
    the same bits as the reference kernel, element for element."""
    if kind == UNIFORM_INT and not low < high:
        raise ValueError("random_uniform_int: Need minval < maxval")
    k0, k1, c2, c3 = _key_words(seed)
    # int64 bounds, a uint64 modulus: uint64 % int64 would be a float in Numba
    low = np.int64(low)
    modulus = np.uint64(np.int64(high) - low)
    of = out.reshape(out.size)
    n = of.size
    wide = of.itemsize == 8
    for g in range((n + 1) // 2):
        x, y = _draws(np.uint64(g), k0, k1, c2, c3)
        if kind == UNIFORM:
            if wide:
                v0, v1 = (x >> np.uint64(11)) * INV_2_53, (y >> np.uint64(11)) * INV_2_53
            else:
                v0, v1 = (x >> np.uint64(40)) * INV_2_24, (y >> np.uint64(40)) * INV_2_24
            of[2 * g] = v0
            if 2 * g + 1 < n:
                of[2 * g + 1] = v1
        elif kind == UNIFORM_INT:
            of[2 * g] = low + np.int64(x % modulus)
            if 2 * g + 1 < n:
                of[2 * g + 1] = low + np.int64(y % modulus)
        else:
            z0, z1 = _normal_pair(x, y)
            if kind == TRUNCATED_NORMAL:
                z0 = _truncated(z0, 0, np.uint64(g), k0, k1, c2, c3)
                z1 = _truncated(z1, 1, np.uint64(g), k0, k1, c2, c3)
            of[2 * g] = z0
            if 2 * g + 1 < n:
                of[2 * g + 1] = z1
