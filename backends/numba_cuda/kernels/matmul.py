"""Matrix products of (batched, broadcast) matrices: NVIDIA's cuBLAS for float and complex
dtypes where it runs (``cublas.py``: a real GPU with nvmath-python), else a register-blocked
shared-memory kernel, described here.

Each block computes a ``BM x BN`` tile of one output matrix (``config.MATMUL_TILE``) with
``(BM / TM) x (BN / TN)`` threads, each accumulating ``TM x TN`` outputs in registers
(``config.MATMUL_WORK``). Per step of ``BK`` along the shared dimension the block stages an
``A`` tile (stored transposed, one padding column against bank conflicts) and a ``B`` tile in
shared memory, zero-padded past the edges; each thread then reads ``TM + TN`` values per ``k``
for ``TM * TN`` multiply-adds, where a one-output-per-thread kernel reads two per one. Thread
``(ty, tx)`` owns rows ``ty + i * (BM / TM)`` and columns ``tx + j * (BN / TN)``, so a warp's
shared-memory reads are broadcasts or consecutive and its stores to ``C`` coalesce. Transposes
only swap the row/column strides used to read A or B, and batch dims broadcast through 0
strides, so no operand is copied.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda import config, cublas, layout
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.memory import empty

# The tile product of one block, as text: a device function (even inlined) or a batch loop
# around it made the same code 2x slower on an H100 (4096^2 float32: 18.8 ms against 9.8), so
# the single-product kernel is this text alone and the batched one indents it into its loop.
# Loads run a constant number of times per thread (the loop unrolls, all loads in flight).
_PRODUCT = """\
for i in range(tm):
    for j in range(tn):
        acc[i, j] = zero
for k0 in range(0, k, bk):
    for step in range(loads_a):
        e = tid + step * threads
        {guard_a}r = row0 + e // bk
        {guard_a}c = k0 + e % bk
        {guard_a}sa[e % bk, e // bk] = a[a0 + r * a_rs + c * a_cs] if r < m and c < k else zero
    for step in range(loads_b):
        e = tid + step * threads
        {guard_b}r = k0 + e // bn
        {guard_b}c = col0 + e % bn
        {guard_b}sb[e // bn, e % bn] = b[b0 + r * b_rs + c * b_cs] if r < k and c < n else zero
    cuda.syncthreads()
    for kk in range(bk):
        for i in range(tm):
            ra[i] = sa[kk, ty + i * ty_n]
        for j in range(tn):
            rb[j] = sb[kk, tx + j * tx_n]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] += ra[i] * rb[j]
    cuda.syncthreads()
for i in range(tm):
    r = row0 + ty + i * ty_n
    if r < m:
        for j in range(tn):
            c = col0 + tx + j * tx_n
            if c < n:
                out[o0 + r * n + c] = acc[i, j]
"""
_SETUP = """\
sa = cuda.shared.array((bk, a_cols), elem)
sb = cuda.shared.array((bk, bn), elem)
acc = cuda.local.array((tm, tn), elem)
ra = cuda.local.array(tm, elem)
rb = cuda.local.array(tn, elem)
tx = cuda.threadIdx.x
ty = cuda.threadIdx.y
tid = ty * tx_n + tx
row0 = cuda.blockIdx.y * bm
col0 = cuda.blockIdx.x * bn
"""
_SINGLE = ("def single(out, a, b, m, n, k, a_rs, a_cs, b_rs, b_cs, zero):", "a0 = b0 = o0 = 0")
_BATCHED = ("def batched(out, a, b, m, n, k, batch_shape, a_batch, b_batch, a_rs, a_cs, b_rs, "
            "b_cs, batches, zero):",
            "for z in range(cuda.blockIdx.z, batches, cuda.gridDim.z):\n"
            "    a0 = offset(z, batch_shape, a_batch)\n"
            "    b0 = offset(z, batch_shape, b_batch)\n"
            "    o0 = z * m * n")


def _indent(text: str, depth: int) -> str:
    return "".join("    " * depth + line + "\n" for line in text.splitlines())


@functools.lru_cache(maxsize=None)
def _blocked_kernel(dtype: np.dtype, tile: tuple, work: tuple) -> tuple[Callable, Callable]:
    from stagecraft.backends.numba_cuda.kernel_module import jit_kernel
    bm, bn, bk = tile
    tm, tn = work
    if bm % tm or bn % tn:
        raise ValueError(f"config.MATMUL_WORK {work} must divide the rows and columns of "
                         f"config.MATMUL_TILE {tile}.")
    ty_n, tx_n = bm // tm, bn // tn
    threads = ty_n * tx_n
    # A bounds test on a load is only needed when the threads do not divide the tile.
    guards = {"guard_a": "" if bm * bk % threads == 0 else "if e < bm * bk: ",
              "guard_b": "" if bk * bn % threads == 0 else "if e < bk * bn: "}
    body = _PRODUCT.format(**guards)
    names = dict(elem=np.dtype(dtype), bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, ty_n=ty_n, tx_n=tx_n,
                 threads=threads,
                 a_cols=bm + 1,  # the transposed A tile's row length: + 1 against bank conflicts
                 loads_a=-(-bm * bk // threads), loads_b=-(-bk * bn // threads))
    kernels = []
    for (header, start), name in ((_SINGLE, "single"), (_BATCHED, "batched")):
        loop = name == "batched"
        text = (header + "\n" + _indent(_SETUP, 1) + _indent(start, 1) +
                _indent(body, 2 if loop else 1))
        kernels.append(jit_kernel(name, text, names))
    return kernels[0], kernels[1]


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
    if cublas.matmul_into(out, a, b, transpose_a, transpose_b):
        return out
    # Element strides of each operand's matrices along the (broadcast) batch dims.
    a_batch = tuple(s * sa[-2] * sa[-1] for s in layout.broadcast_strides(sa[:-2], batch))
    b_batch = tuple(s * sb[-2] * sb[-1] for s in layout.broadcast_strides(sb[:-2], batch))
    a_rs, a_cs = (1, sa[-1]) if transpose_a else (sa[-1], 1)
    b_rs, b_cs = (1, sb[-1]) if transpose_b else (sb[-1], 1)
    batches = int(np.prod(batch))
    if not batch:
        batch, a_batch, b_batch = (1,), (0,), (0,)
    tile, work = tuple(config.MATMUL_TILE), tuple(config.MATMUL_WORK)
    blocks = (-(-n // tile[1]), -(-m // tile[0]), max(1, min(batches, config.MAX_BLOCKS, 65535)))
    threads = (tile[1] // work[1], tile[0] // work[0])
    single, batched = _blocked_kernel(np.dtype(a.dtype), tile, work)
    zero = a.dtype.type(0)
    if batches == 1:
        launch(single, (blocks[:2], threads), out, a, b, m, n, k, a_rs, a_cs, b_rs, b_cs, zero)
    else:
        launch(batched, (blocks, threads), out, a, b, m, n, k, batch, a_batch, b_batch, a_rs,
               a_cs, b_rs, b_cs, batches, zero)
    return out
