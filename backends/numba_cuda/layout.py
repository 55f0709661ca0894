"""Index plans for layout ops: the offset and element strides that a view of a C-contiguous
buffer reads, so one strided-copy kernel performs transposes, broadcasts, slices and diagonals.

NumPy computes the plans: the op is applied to a *stand-in*, a 1-byte buffer viewed through
``as_strided`` with the real shape and element strides (``uint8`` makes byte offsets equal
element offsets). View operations (basic indexing, transpose, broadcast_to, diagonal) only do
index arithmetic and never read the buffer, so NumPy's own rules and error messages apply
exactly (negative steps, ellipsis, ``index 5 is out of bounds ...``) at no memory cost.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

_BUFFER = np.zeros(1, np.uint8)


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape``.

    >>> c_strides((2, 3, 4))
    (12, 4, 1)
    """
    out, step = [], 1
    for d in reversed(tuple(shape)):
        out.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(out))


def stand_in(shape: Sequence[int]) -> np.ndarray:
    """A zero-cost NumPy array of ``shape`` whose views reveal offsets and strides (never read
    its elements: they are not backed by memory)."""
    shape = tuple(int(d) for d in shape)
    return np.lib.stride_tricks.as_strided(_BUFFER, shape, c_strides(shape), writeable=False)


def plan(view: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """``(offset, shape, strides)`` in elements of a view of a :func:`stand_in`.

    >>> plan(stand_in((4, 5))[1:, ::-2])
    (9, (3, 3), (5, -2))
    """
    offset = view.__array_interface__["data"][0] - _BUFFER.__array_interface__["data"][0]
    return offset, tuple(view.shape), tuple(view.strides)


def broadcast_strides(shape: Sequence[int], out: Sequence[int]) -> tuple[int, ...]:
    """Element strides that read a C-contiguous array of ``shape`` broadcast to ``out``.

    >>> broadcast_strides((3, 1), (2, 3, 4))
    (0, 1, 0)
    """
    own = c_strides(shape)
    lead = len(out) - len(shape)
    return (0,) * lead + tuple(0 if d == 1 and o != 1 else s
                               for d, o, s in zip(shape, out[lead:], own))
