"""float16/bfloat16 in compiled code (Numba has no float16 arrays): generated code holds a
half-precision tensor in a float32 buffer and rounds each op's result to the half format with
these kernels (``backends/codegen/half.py``'s rounding, compiled), so that every value it
holds is a float16 / bfloat16 value and the results equal the NumPy kernels' bit for bit.

``round_to(x, *F16)`` rounds one element (fused loops); ``round_array(a, *F16)`` a kernel's
whole result; ``floor_to(a, q)`` makes float32 uniforms in [0, 1) multiples of the half
format's quantum ``q`` (``ir/ops/philox.py``: a uniform never rounds up to 1).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from stagecraft.backends.codegen import half as _half

_JIT = dict(cache=True, error_model="numpy", nogil=True)

round_to = numba.njit(**_JIT)(_half.round_to)


@numba.njit(**_JIT)
def round_array(a, bits, emin, top):
    """A new float32 array: ``a``'s elements rounded to the format (see ``round_to``)."""
    out = np.empty(a.shape, np.float32)
    fa, fo = a.reshape(a.size), out.reshape(out.size)
    for j in range(fa.size):
        fo[j] = round_to(fa[j], bits, emin, top)
    return out


@numba.njit(**_JIT)
def floor_to(a, q):
    """A new float32 array: ``a``'s elements rounded down to multiples of ``q``."""
    out = np.empty(a.shape, np.float32)
    fa, fo = a.reshape(a.size), out.reshape(out.size)
    for j in range(fa.size):
        fo[j] = math.floor(fa[j] / q) * q
    return out
