"""Layout and creation kernels: strided copies (transpose, broadcast, slices, diagonals),
strided scatters, concat, tile, fill, eye, range, diag and the coordinates of true elements.

Every kernel is a grid-stride loop over its output, so any size runs with the configured
launch parameters; index plans come from :mod:`stagecraft.backends.numba_cuda.layout`.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np
from numba import uint64

from stagecraft.backends.numba_cuda import layout
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.kernels.index import offset_function
from stagecraft.backends.numba_cuda.launch import bind_cuda, grid
from stagecraft.backends.numba_cuda.launcher import launch, launch_over
from stagecraft.backends.numba_cuda.memory import empty, scalar, to_device

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


def _rank1(shape: tuple, strides: tuple) -> tuple[tuple, tuple]:
    # Kernels take tuples of the same length >= 1; a rank-0 view is one element.
    return (shape, strides) if shape else ((1,), (0,))


# ------------------------------------------------------------------------ strided copies

@functools.lru_cache(maxsize=None)
def _copy_kernel() -> Callable:
    bind_cuda(globals())
    offset = offset_function()

    @library_kernel
    def copy(out, src, base, shape, strides):
        # (unsigned indices: see index.grid_stride_loop)
        step = cuda.gridsize(1)
        i = cuda.grid(1)
        while i < out.size:
            out[uint64(i)] = src[uint64(base + offset(i, shape, strides))]
            i += step
    return copy


def copy_view(x: Any, view: Callable[[np.ndarray], np.ndarray]) -> Any:
    """A new contiguous device array holding ``view(x)``, for a NumPy view function ``view``
    (``lambda a: a.T``, ``lambda a: a[1:, ::2]``...), computed by one strided copy.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(copy_view(to_device(np.arange(6).reshape(2, 3)), lambda a: a.T[::-1]))
    array([[2, 5],
           [1, 4],
           [0, 3]])
    """
    base, shape, strides = layout.plan(view(layout.stand_in(x.shape)))
    out = empty(shape, x.dtype)
    if x.size == 1 and out.size > 1:   # (a broadcast scalar, as a gradient's: no index math)
        launch_over(_fill_from_kernel(), out.size, out, x)
    else:
        launch_over(_copy_kernel(), out.size, out, x, base, *_rank1(shape, strides))
    return out


@functools.lru_cache(maxsize=None)
def _scatter_kernel() -> Callable:
    bind_cuda(globals())
    offset = offset_function()

    @library_kernel
    def scatter(out, src, base, shape, strides):
        step = cuda.gridsize(1)
        i = cuda.grid(1)
        while i < src.size:
            out[uint64(base + offset(i, shape, strides))] = src[uint64(i)]
            i += step
    return scatter


def scatter_view(out: Any, src: Any, view: Callable[[np.ndarray], np.ndarray]) -> Any:
    """Writes ``src`` into the elements of ``out`` that ``view(out)`` selects (basic indexing
    never selects an element twice, so the writes do not race); returns ``out``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> out = full((2, 3), 0, np.int32)
    >>> to_host(scatter_view(out, to_device(np.array([7, 8], np.int32)), lambda a: a[:, 1]))
    array([[0, 7, 0],
           [0, 8, 0]], dtype=int32)
    """
    base, shape, strides = layout.plan(view(layout.stand_in(out.shape)))
    if tuple(src.shape) != shape:
        src = copy_view(src, lambda a: np.broadcast_to(a, shape))
    launch_over(_scatter_kernel(), src.size, out, src, base, *_rank1(shape, strides))
    return out


# ------------------------------------------------- views at an index read on the device

@functools.lru_cache(maxsize=None)
def _at_kernel(scatter: bool) -> Callable:
    bind_cuda(globals())
    offset = offset_function()

    @cuda.jit(device=True)
    def start(base, index, size, step, wrap, err):
        # the view's first element, or -1 (and the error flag set) for an index out of range
        i = index[0]
        if i < 0 and wrap:
            i += size
        if i < 0 or i >= size:
            err[0] = 1
            return -1
        return base + i * step

    @library_kernel
    def copy_at(out, src, base, shape, strides, index, size, step, wrap, err):
        at = start(base, index, size, step, wrap, err)
        for j in range(cuda.grid(1), out.size if at >= 0 else 0, cuda.gridsize(1)):
            out[j] = src[at + offset(j, shape, strides)]

    @library_kernel
    def scatter_at(out, src, base, shape, strides, index, size, step, wrap, err):
        at = start(base, index, size, step, wrap, err)
        for j in range(cuda.grid(1), src.size if at >= 0 else 0, cuda.gridsize(1)):
            out[at + offset(j, shape, strides)] = src[j]
    return scatter_at if scatter else copy_at


def view_at(x: Any, view: Callable[[np.ndarray], np.ndarray], index: Any, size: int,
            step: int, into: Any = None, wrap: bool = True) -> Any:
    """``copy_view(x, view)`` with the view moved by ``index * step`` elements, or with
    ``into`` the array ``into`` with ``x`` written there (``scatter_view``, ``x`` shaped like
    the view); ``index`` is a one-element integer device array read on the device (wrapped
    like Python's when negative, with ``wrap``): the host reads only the range check's flag,
    which is the same for every valid index, so a staged loop's ``x[i]`` issues the same work
    in every pass. None when the index is not in ``[-size, size)`` (with ``wrap``, else
    ``[0, size)``): the caller then raises its own error.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.arange(6).reshape(3, 2))
    >>> to_host(view_at(x, lambda a: a[0], to_device(np.int32(-1)), 3, 2))
    array([4, 5])
    >>> view_at(x, lambda a: a[0], to_device(np.int32(3)), 3, 2) is None
    True
    """
    target = x if into is None else into
    base, shape, strides = layout.plan(view(layout.stand_in(target.shape)))
    out = empty(shape, x.dtype) if into is None else into
    err = to_device(np.zeros(1, np.int8))
    n = out.size if into is None else x.size
    launch(_at_kernel(into is not None), grid(max(n, 1)), out, x, base,
           *_rank1(shape, strides), index.reshape(1), size, step, int(wrap), err)
    return None if scalar(err) else out


# -------------------------------------------------------------------------------- fills

@functools.lru_cache(maxsize=None)
def _fill_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def fill(out, value):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = value
    return fill


@functools.lru_cache(maxsize=None)
def _fill_from_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def fill_from(out, value):
        v = value[0]
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = v
    return fill_from


def full(shape: Sequence[int], value: Any, dtype: Any) -> Any:
    """A device array of ``shape`` filled with the host scalar ``value`` (zeros, ones).

    >>> full((2,), 1.5, np.float32).copy_to_host()
    array([1.5, 1.5], dtype=float32)
    """
    out = empty(shape, dtype)
    launch_over(_fill_kernel(), out.size, out, np.dtype(dtype).type(value))
    return out


def fill(value: Any, dims: Sequence[int]) -> Any:
    """``fill``: ``dims`` filled with the rank-0 device array ``value`` (read on the device).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(fill(to_device(np.bool_(True)), (3,)))
    array([ True,  True,  True])
    """
    out = empty(dims, value.dtype)
    launch_over(_fill_from_kernel(), out.size, out, value)
    return out


# ---------------------------------------------------------------------- concat and tile

@functools.lru_cache(maxsize=None)
def _concat_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def place(out, src, length, inner, total, start):
        # src is (outer, length, inner); it lands at [:, start:start + length, :] of
        # out, which is (outer, total, inner).
        block = length * inner
        for i in range(cuda.grid(1), src.size, cuda.gridsize(1)):
            o = i // block
            r = i - o * block
            out[o * total * inner + start * inner + r] = src[i]
    return place


def concat(xs: Sequence[Any], axis: int, out_shape: tuple) -> Any:
    """``concat`` along ``axis`` (normalized here) into a new array of ``out_shape``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a, b = to_device(np.zeros((2, 1))), to_device(np.ones((2, 2)))
    >>> to_host(concat([a, b], -1, (2, 3)))
    array([[0., 1., 1.],
           [0., 1., 1.]])
    """
    axis %= len(out_shape)
    out = empty(out_shape, xs[0].dtype)
    inner = int(np.prod(out_shape[axis + 1:]))
    start = 0
    for x in xs:
        length = tuple(x.shape)[axis]
        launch_over(_concat_kernel(), x.size, out, x, length, inner, out_shape[axis], start)
        start += length
    return out


@functools.lru_cache(maxsize=None)
def _tile_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def tile(out, src, shape, in_shape, in_strides):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            j = i
            o = 0
            for d in range(len(shape) - 1, -1, -1):
                o += ((j % shape[d]) % in_shape[d]) * in_strides[d]
                j //= shape[d]
            out[i] = src[o]
    return tile


def tile(x: Any, multiples: Sequence[int]) -> Any:
    """``tile``: output coordinate c reads input coordinate c mod the input's dims.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(tile(to_device(np.array([1, 2])), (3,)))
    array([1, 2, 1, 2, 1, 2])
    """
    in_shape = tuple(x.shape)
    shape = tuple(d * int(m) for d, m in zip(in_shape, multiples))
    out = empty(shape, x.dtype)
    if not shape:
        shape, in_shape = (1,), (1,)
    launch_over(_tile_kernel(), out.size, out, x, shape, in_shape,
            layout.c_strides(in_shape))
    return out


# -------------------------------------------------------------------- eye, range, diag

@functools.lru_cache(maxsize=None)
def _eye_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def eye(out, columns, one, zero):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = one if i // columns == i % columns else zero
    return eye


def eye(rows: int, columns: int, dtype: np.dtype) -> Any:
    """``eye``: ones on the main diagonal of a ``rows`` x ``columns`` matrix.

    >>> eye(2, 3, np.int32).copy_to_host()
    array([[1, 0, 0],
           [0, 1, 0]], dtype=int32)
    """
    out = empty((rows, columns), dtype)
    t = np.dtype(dtype).type
    launch_over(_eye_kernel(), out.size, out, max(columns, 1), t(1), t(0))
    return out


@functools.lru_cache(maxsize=None)
def _range_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def arange(out, start, delta):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = start + i * delta
    return arange


def arange(start: Any, limit: Any, delta: Any) -> Any:
    """``range`` from rank-0 device arrays. The length depends on the values, so the three
    scalars are read on the host (three 1-element copies).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(arange(*(to_device(np.int32(v)) for v in (5, 0, -2))))
    array([5, 3, 1], dtype=int32)
    """
    s, lim, d = scalar(start), scalar(limit), scalar(delta)
    if d == 0:
        raise ValueError("Requires delta != 0")
    n = max(0, math.ceil((float(lim) - float(s)) / float(d)))
    out = empty((n,), start.dtype)
    # Integers step exactly in int64; floats in float64 (NumPy's arange computes start +
    # i * delta), rounded to the dtype on store.
    wide = np.int64 if start.dtype.kind == "i" else np.float64
    launch_over(_range_kernel(), n, out, wide(s), wide(d))
    return out


@functools.lru_cache(maxsize=None)
def _diag_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def diag(out, src, n, zero):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            b = i // (n * n)
            r = (i // n) % n
            c = i % n
            out[i] = src[b * n + c] if r == c else zero
    return diag


def diag(x: Any) -> Any:
    """``diag``: a batch of square matrices with ``x``'s last axis on the diagonal.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(diag(to_device(np.array([1.0, 2.0]))))
    array([[1., 0.],
           [0., 2.]])
    """
    n = tuple(x.shape)[-1]
    out = empty(tuple(x.shape) + (n,), x.dtype)
    launch_over(_diag_kernel(), out.size, out, x, n, x.dtype.type(0))
    return out


# ------------------------------------------------------------------ where (coordinates)

# Chunks of where_indices: bounds the serial scan of the per-chunk counts (~0.1 ms on a GPU).
_WHERE_WORKERS = 16384


@functools.lru_cache(maxsize=None)
def _count_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def count(x, chunk, counts):
        t = cuda.grid(1)
        if t < counts.size:
            c = 0
            for i in range(t * chunk, min((t + 1) * chunk, x.size)):
                if x[i] != 0:
                    c += 1
            counts[t] = c
    return count


@functools.lru_cache(maxsize=None)
def _exclusive_scan_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def scan(counts, total):
        # At most _WHERE_WORKERS counts: one thread scans them.
        if cuda.grid(1) == 0:
            s = 0
            for t in range(counts.size):
                c = counts[t]
                counts[t] = s
                s += c
            total[0] = s
    return scan


@functools.lru_cache(maxsize=None)
def _coordinates_kernel() -> Callable:
    bind_cuda(globals())
    @library_kernel
    def coordinates(x, chunk, starts, shape, out):
        t = cuda.grid(1)
        if t < starts.size:
            row = starts[t]
            rank = len(shape)
            for i in range(t * chunk, min((t + 1) * chunk, x.size)):
                # (past the rows counted: a replayed CUDA graph runs this with the recorded
                # count before the count's guard is read; it must not write out of bounds)
                if x[i] != 0 and (row + 1) * rank <= out.size:
                    j = i
                    for d in range(rank - 1, -1, -1):
                        out[row * rank + d] = j % shape[d]
                        j //= shape[d]
                    row += 1
    return coordinates


def where_indices(x: Any) -> Any:
    """``where_indices``: int64 coordinates of the non-zero elements in C order.

    Each thread counts one chunk, one thread scans the counts, each thread writes its chunk's
    rows from its offset. The number of rows is the output's shape, so it is copied to the
    host (one 1-element read).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(where_indices(to_device(np.array([[0, 3], [4, 0]]))))
    array([[0, 1],
           [1, 0]])
    """
    n, rank = x.size, x.ndim
    blocks, threads = grid(n)
    workers = max(1, min(n, blocks * threads, _WHERE_WORKERS))
    chunk = max(1, -(-n // workers))
    workers = max(1, -(-n // chunk))
    counts = empty((workers,), np.int64)
    total = empty((1,), np.int64)
    b = -(-workers // threads)
    launch(_count_kernel(), (b, threads), x, chunk, counts)
    launch(_exclusive_scan_kernel(), (1, 1), counts, total)
    rows = int(scalar(total)) if n else 0
    out = empty((rows, rank), np.int64)
    if rows and rank:
        launch(_coordinates_kernel(), (b, threads), x, chunk, counts, tuple(x.shape), out)
    return out
