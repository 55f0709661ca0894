"""Device functions for index arithmetic shared by the kernels: the offset of the element at
a flat (C-order) position of a shape, read through arbitrary element strides."""
from __future__ import annotations

import functools
from typing import Callable

from stagecraft.backends.numba_cuda.launch import cuda_module


def offset(i, shape, strides):
    """Offset of the element at flat C-order position ``i`` of ``shape`` through ``strides``
    (tuples of equal length; a stride of 0 repeats, a negative one walks backwards).

    >>> offset(5, (2, 3), (1, 2))   # coordinates (1, 2) of a transposed 3x2 buffer
    5
    """
    o = 0
    for d in range(len(shape) - 1, -1, -1):
        o += (i % shape[d]) * strides[d]
        i //= shape[d]
    return o


@functools.lru_cache(maxsize=None)
def offset_function() -> Callable:
    """:func:`offset` as a CUDA device function."""
    return cuda_module().jit(device=True)(offset)
