"""Random example inputs for the tests generated from the op table."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from stagecraft.ir.dtypes import DType


def values(rng: np.random.Generator, dtype: DType, shape: Sequence[int], lo: float = -2.0,
           hi: float = 2.0, avoid: Sequence[float] = (), nonzero: bool = False) -> np.ndarray:
    """Uniform values in [lo, hi] of ``dtype`` (for unsigned integers, [0, hi - lo] when lo is
    negative); floats keep 0.15 away from each point in
    ``avoid`` (kinks where finite differences are meaningless); ``nonzero`` for divisors.
    Complex values have real and imaginary parts drawn like floats (``avoid`` and ``nonzero``
    apply to the real part).

    >>> from stagecraft.ir import dtypes as dt
    >>> values(np.random.default_rng(0), dt.complex64, (2,)).dtype
    dtype('complex64')
    """
    shape = tuple(shape)
    if dtype.is_complex:  # real and imaginary parts each drawn as the real dtype's values
        part = dtype.real_dtype
        re = values(rng, part, shape, lo, hi, avoid, nonzero)
        return np.asarray(re + 1j * values(rng, part, shape, lo, hi, avoid), dtype.np)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        if dtype.is_unsigned:  # the same count of draws, shifted to be non-negative
            lo, hi = (0, hi - lo) if lo < 0 else (lo, hi)
        v = rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, shape)
        if nonzero:
            v = np.where(v == 0, 1, v)
        return np.asarray(v, dtype.np)
    v = rng.uniform(lo, hi, shape)
    for k in avoid:
        side = np.where(v >= k, 1.0, -1.0)
        v = np.where(np.abs(v - k) < 0.15, k + 0.2 * side, v)
    if nonzero:
        v = np.where(np.abs(v) < 0.2, 0.5, v)
    return np.asarray(v, dtype.np)


UNARY_SHAPES = [(), (5,), (3, 4)]
BINARY_SHAPES = [((), ()), ((4,), ()), ((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,))]
