"""The kernel of ``eig`` (``ir/ops/eig.py``): LAPACK's geev through Numba's ``np.linalg.eig``,
one call per matrix of a ``(batch, n, n)`` C-contiguous array, on a complex copy (Numba's
``eig`` keeps the input's domain: a real matrix's complex eigenvalues need complex input).

>>> e, v = eig3(np.array([[[0.0, -1.0], [1.0, 0.0]]]), np.zeros(0, np.complex128))
>>> sorted(e[0].round(6).tolist(), key=lambda z: z.imag)
[-1j, 1j]
"""
from __future__ import annotations

import numba
import numpy as np

from stagecraft.ir.ops.eig import EIG_FAILED

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
_FAILED = "eig: " + EIG_FAILED


@_jit
def eig3(x, like):
    """``(e, v)`` of each matrix, in the dtype of ``like`` (complex64 or complex128)."""
    nb, n = x.shape[0], x.shape[1]
    e = np.empty((nb, n), like.dtype)
    v = np.empty((nb, n, n), like.dtype)
    ok = True
    for b in range(nb):
        try:
            eb, vb = np.linalg.eig(x[b].astype(np.complex128))
            e[b] = eb
            v[b] = vb
        except Exception:  # noqa: BLE001 - LAPACK did not converge
            ok = False
    if not ok:
        raise ValueError(_FAILED)
    return e, v
