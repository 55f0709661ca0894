"""Matrix products: a tiled shared-memory kernel over (batched, broadcast) matrices.

Each block computes one TILE x TILE tile of one output matrix: per step it loads a tile of
A and a tile of B into shared memory (zero-padded past the edges), synchronizes, and adds
their product. Transposes only swap the row/column strides used to read A or B, and batch
dims broadcast through 0 strides, so no operand is copied.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda import config, layout
from stagecraft.backends.numba_cuda.kernels.index import offset_function
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.memory import empty, flat

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


@functools.lru_cache(maxsize=None)
def _tiled_kernel(dtype: np.dtype, tile: int) -> Callable:
    import numba
    bind_cuda(globals())
    offset = offset_function()
    elem = numba.from_dtype(dtype)

    @cuda.jit
    def matmul(out, a, b, m, n, k, batch_shape, a_batch, b_batch, a_rs, a_cs, b_rs, b_cs,
               batches, zero):
        sa = cuda.shared.array((tile, tile), elem)
        sb = cuda.shared.array((tile, tile), elem)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        for z in range(cuda.blockIdx.z, batches, cuda.gridDim.z):
            a0 = offset(z, batch_shape, a_batch)
            b0 = offset(z, batch_shape, b_batch)
            acc = zero
            for t0 in range(0, k, tile):
                sa[ty, tx] = a[a0 + row * a_rs + (t0 + tx) * a_cs] \
                    if row < m and t0 + tx < k else zero
                sb[ty, tx] = b[b0 + (t0 + ty) * b_rs + col * b_cs] \
                    if t0 + ty < k and col < n else zero
                cuda.syncthreads()
                for j in range(tile):
                    acc += sa[ty, j] * sb[j, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[z * m * n + row * n + col] = acc
    return matmul


def matmul(a: Any, b: Any, transpose_a: bool, transpose_b: bool, out_shape: tuple) -> Any:
    """``matmul`` of device arrays (rank >= 2, batch dims broadcast) into ``out_shape``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = to_device(np.arange(6, dtype=np.int64).reshape(2, 3))
    >>> to_host(matmul(a, a, False, True, (2, 2)))
    array([[ 5, 14],
           [14, 50]])
    """
    m, n = out_shape[-2], out_shape[-1]
    sa, sb = tuple(a.shape), tuple(b.shape)
    k = sa[-2] if transpose_a else sa[-1]
    batch = tuple(out_shape[:-2])
    out = empty(out_shape, a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        from stagecraft.backends.numba_cuda.kernels.shape import full
        return full(out_shape, 0, a.dtype)
    # Element strides of each operand's matrices along the (broadcast) batch dims.
    a_batch = tuple(s * sa[-2] * sa[-1] for s in layout.broadcast_strides(sa[:-2], batch))
    b_batch = tuple(s * sb[-2] * sb[-1] for s in layout.broadcast_strides(sb[:-2], batch))
    a_rs, a_cs = (1, sa[-1]) if transpose_a else (sa[-1], 1)
    b_rs, b_cs = (1, sb[-1]) if transpose_b else (sb[-1], 1)
    batches = int(np.prod(batch))
    if not batch:
        batch, a_batch, b_batch = (1,), (0,), (0,)
    tile = config.TILE
    blocks = (-(-n // tile), -(-m // tile), max(1, min(batches, config.MAX_BLOCKS, 65535)))
    _tiled_kernel(np.dtype(a.dtype), tile)[blocks, (tile, tile)](
        flat(out), flat(a), flat(b), m, n, k, batch, a_batch, b_batch, a_rs, a_cs, b_rs, b_cs,
        batches, a.dtype.type(0))
    return out
