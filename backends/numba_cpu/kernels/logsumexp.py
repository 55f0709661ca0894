"""Numba kernel of ``cumulative_logsumexp`` (``ir/ops/logsumexp.py``): one sequential
``np.logaddexp`` per element along axis 1 of a 3-D view, in the input's dtype, in NumPy's
``logaddexp.accumulate`` order (log(0) = -inf first, which leaves the first element as it is)."""
from __future__ import annotations

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", nogil=True)


@numba.njit(**_JIT)
def cumulative_logsumexp3(x3, exclusive, reverse):
    n0, n1, n2 = x3.shape
    out = np.empty((n0, n1, n2), x3.dtype)
    start = np.full(1, -np.inf, x3.dtype)   # -inf in the input's dtype
    for i in range(n0):
        for k in range(n2):
            acc = start[0]
            for jj in range(n1):
                j = n1 - 1 - jj if reverse else jj
                if exclusive:
                    out[i, j, k] = acc
                acc = np.logaddexp(acc, x3[i, j, k])
                if not exclusive:
                    out[i, j, k] = acc
    return out
