"""Numba kernels of ``segment_reduce``, ``unique_index`` (``ir/ops/segment.py``,
``ir/ops/search.py``) and ``searchsorted``: plain loops over rows, with the reference
kernels' error messages."""
from __future__ import annotations

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", nogil=True)
SUM, PROD, MAX, MIN = 0, 1, 2, 3


@numba.njit(**_JIT)
def _position(shape, flat):
    """``"i,j"``: the coordinates of flat position ``flat`` in ``shape``."""
    text, rest = "", flat
    for d in range(shape.size - 1, -1, -1):
        text = str(rest % shape[d]) + ("," if d < shape.size - 1 else "") + text
        rest //= shape[d]
    return text


@numba.njit(**_JIT)
def check_ids(ids, ids_shape, n, is_sorted):
    """Raises the reference kernel's error for a bad id (``ir/ops/segment.check_ids``)."""
    if n < 0:
        raise ValueError("num_segments must be non-negative, got " + str(n) + ".")
    if is_sorted:
        for i in range(ids.size):
            if ids[i] < 0:
                raise ValueError("segment ids must be >= 0")
        for i in range(1, ids.size):
            if ids[i] < ids[i - 1]:
                raise ValueError("segment ids are not increasing")
    for i in range(ids.size):
        if ids[i] >= n:
            raise ValueError("segment_ids[" + _position(ids_shape, i) + "] = " + str(ids[i]) +
                             " is out of range [0, " + str(n) + ")")


@numba.njit(**_JIT)
def segment_reduce(data, ids, ids_shape, n, mode, is_sorted, init):
    """data: (rows, width) C-contiguous; ids: (rows,); returns (n, width)."""
    check_ids(ids, ids_shape, n, is_sorted)
    width = data.shape[1]
    out = np.full((n, width), init, data.dtype)
    seen = np.zeros(n, np.bool_)
    for i in range(ids.size):
        s = ids[i]
        if s < 0:
            continue
        seen[s] = True
        for r in range(width):
            v = data[i, r]
            if mode == SUM:
                out[s, r] += v
            elif mode == PROD:
                out[s, r] *= v
            elif mode == MAX:
                if v > out[s, r] or v != v:
                    out[s, r] = v
            elif v < out[s, r] or v != v:
                out[s, r] = v
    if is_sorted and (mode == MAX or mode == MIN):
        for s in range(n):
            if not seen[s]:
                out[s, :] = 0
    return out


@numba.njit(**_JIT)
def unique_index(x, out):
    """out[i]: the place of x[i]'s value among the distinct values in order of first
    occurrence (NaNs are all distinct)."""
    places = dict()
    count = 0
    for i in range(x.size):
        v = x[i]
        if v != v:   # NaN: never equal to an earlier value
            out[i] = count
            count += 1
            continue
        if v == 0:
            v = v - v   # -0.0 -> 0.0: equal values must hash alike
        k = places.get(v, -1)
        if k < 0:
            places[v] = count
            k = count
            count += 1
        out[i] = k
    return out


@numba.njit(**_JIT)
def searchsorted2(seq, values, right, out):
    """Row r of out: ``np.searchsorted(seq[r], values[r], side)``."""
    for r in range(values.shape[0]):
        if right:
            out[r] = np.searchsorted(seq[r], values[r], side="right")
        else:
            out[r] = np.searchsorted(seq[r], values[r], side="left")
    return out
