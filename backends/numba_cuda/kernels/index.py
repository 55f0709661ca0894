"""Device functions for index arithmetic shared by the kernels: the offset of the element at
a flat (C-order) position of a shape, read through arbitrary element strides."""
from __future__ import annotations

import functools
from typing import Callable

from stagecraft.backends.numba_cuda.launch import cuda_module


def offset(i, shape, strides):
    """Offset of the element at flat C-order position ``i`` of ``shape`` through ``strides``
    (tuples of equal length; a stride of 0 repeats, a negative one walks backwards), for
    ``0 <= i < prod(shape)``: the outermost coordinate is what is left of ``i`` and needs no
    remainder, so a one-dimensional shape costs one multiplication (a reduction's inner loop
    reads every element this way) instead of a 64-bit remainder.

    >>> offset(5, (2, 3), (1, 2))   # coordinates (1, 2) of a transposed 3x2 buffer
    5
    >>> offset(7, (12,), (3,))
    21
    """
    o = 0
    for d in range(len(shape) - 1, 0, -1):
        o += (i % shape[d]) * strides[d]
        i //= shape[d]
    return o + i * strides[0]


def grid_stride_loop(size: str) -> list[str]:
    """The opening lines of a generated kernel's grid-stride loop over ``size`` items (Python
    source, indented for the kernel's body). In the loop body ``i`` is the item's flat index
    (int64, for :func:`offset`) and ``u`` the same index unsigned, for indexing flat arrays:
    Numba makes every access through a signed index handle negative indices, and a Python
    ``range`` loop counts its trips, so the usual ``for i in range(cuda.grid(1), n,
    cuda.gridsize(1))`` compiles to about twice the PTX per item (an add on sm_90: 186 lines
    of PTX against 97, the loop unrolled). The next index is taken first, so ``continue`` is
    safe. The kernel's globals must hold ``uint64`` (Numba's) and ``cuda``.

    >>> print("\\n".join(grid_stride_loop("out.size")))
        step = cuda.gridsize(1)
        nxt = cuda.grid(1)
        while nxt < out.size:
            i = nxt
            nxt += step
            u = uint64(i)
    """
    return ["    step = cuda.gridsize(1)", "    nxt = cuda.grid(1)", f"    while nxt < {size}:",
            "        i = nxt", "        nxt += step", "        u = uint64(i)"]


@functools.lru_cache(maxsize=None)
def offset_function() -> Callable:
    """:func:`offset` as a CUDA device function."""
    return cuda_module().jit(device=True)(offset)
