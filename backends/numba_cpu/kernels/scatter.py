"""Numba kernel of ``scatter_nd`` (``ir/ops/slicing.py``): the generator reshapes the input to
``(positions, row)``, the indices to ``(n, k)`` and the updates to ``(n, row)``."""
from __future__ import annotations

import numba
import numpy as np

from stagecraft.backends.numba_cpu.kernels.slicing import dims_text

_JIT = dict(cache=True, error_model="numpy", nogil=True)
UPDATE, ADD, SUB = 0, 1, 2


@numba.njit(**_JIT)
def _index_message(lead, n, index, shape):
    """The reference kernel's message for row ``n`` of the indices (``lead``: their dims
    without the last)."""
    where = ""
    if lead.size:
        rest, parts = n, ""
        for d in range(lead.size - 1, -1, -1):
            parts = ("," if d < lead.size - 1 else "") + parts
            parts = str(rest % lead[d]) + parts
            rest //= lead[d]
        where = "[" + parts + "]"
    text = ""
    for j in range(index.size):
        text += (", " if j else "") + str(index[j])
    return "indices" + where + " = [" + text + "] does not index into shape " + dims_text(shape)


@numba.njit(**_JIT)
def scatter_nd_into(out, indices, updates, lead, shape, mode):
    """out: (positions, row), already holding the input; indices: (n, k); updates: (n, row);
    ``shape``: the input's dims (int64), ``lead``: the indices' dims but the last. Updates
    apply in order, so the last of repeated 'update' indices wins."""
    k = indices.shape[1]
    for n in range(indices.shape[0]):
        pos = np.int64(0)
        for j in range(k):
            i = np.int64(indices[n, j])
            if i < 0 or i >= shape[j]:
                raise IndexError(_index_message(lead, n, indices[n], shape))
            pos = pos * shape[j] + i
        for r in range(out.shape[1]):
            if mode == UPDATE:
                out[pos, r] = updates[n, r]
            elif mode == ADD:
                out[pos, r] = out[pos, r] + updates[n, r]
            else:
                out[pos, r] = out[pos, r] - updates[n, r]


@numba.njit(**_JIT)
def scatter_nd(x, indices, updates, mode):
    """The whole op for C-contiguous arrays of any shape known only at run time."""
    xshape = np.array(x.shape, np.int64)
    ishape = np.array(indices.shape, np.int64)
    k = ishape[-1]
    positions, rows, n = 1, 1, 1
    for d in range(xshape.size):
        if d < k:
            positions *= xshape[d]
        else:
            rows *= xshape[d]
    for d in range(ishape.size - 1):
        n *= ishape[d]
    out = x.copy()
    scatter_nd_into(out.reshape((positions, rows)), indices.reshape((n, k)),
                    updates.reshape((n, rows)), ishape[:-1], xshape, mode)
    return out
