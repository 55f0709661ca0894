"""Reductions (block tree reductions over any axes, keepdims), arg-reductions and scans.

A reduction splits the input's dims into kept ones (one output each) and reduced ones (summed
over), and reads the input in place through both sets of strides, so no transpose is needed.
Two kernels, chosen by which is read coalesced:

- *tree* (the innermost dim is reduced: row sums, full sums): each block owns an output at a
  time (grid-stride over outputs); its threads accumulate a strided share of the reduced
  elements, then halve a shared-memory buffer until thread 0 holds the result;
- *lines* (the innermost dim is kept: column sums such as a bias gradient's, or reductions
  shorter than a block): one thread per output walks the reduced elements, and neighbouring
  threads read neighbouring addresses.

Few outputs would leave the GPU idle (a full sum is one block), so the reduced elements are
cut into chunks, each a partial result of its own (one block, or one thread, per chunk), and
the partials are reduced again: two launches, the same order every time (deterministic).
Adjacent dims of one kind are merged first, so a contiguous run is one dim (cheap offsets).

Arg-reductions use one thread per output line (sequential along the axis, so ties resolve as in
NumPy); scans cut lines into chunks (see :func:`scan`).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np
from numba import uint64

from stagecraft.backends.numba_cuda import config, layout
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.kernels.index import offset_function
from stagecraft.backends.numba_cuda.launch import bind_cuda, grid
from stagecraft.backends.numba_cuda.launcher import Bound, launch
from stagecraft.backends.numba_cuda.memory import empty, reshape

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _max(a, b):
    return a if (a != a or a > b) else b   # NaN propagates, as in np.max


def _min(a, b):
    return a if (a != a or a < b) else b


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


COMBINE: dict[str, Callable] = {"sum": _add, "prod": _mul, "max": _max, "min": _min,
                                "all": _and, "any": _or, "mean": _add}


def identity(kind: str, dtype: np.dtype) -> Any:
    """The value an empty reduction gives (TensorFlow's identities: -inf / the lowest int for
    max, and so on)."""
    t = dtype.type
    if kind in ("sum", "mean"):
        return t(0)
    if kind == "prod":
        return t(1)
    if kind == "all":
        return np.bool_(True)
    if kind == "any":
        return np.bool_(False)
    if dtype.kind == "f":
        return t(-np.inf if kind == "max" else np.inf)
    info = np.iinfo(dtype)
    return t(info.min if kind == "max" else info.max)


@functools.lru_cache(maxsize=None)
def block_fold(kind: str, threads: int) -> Callable:
    """A device function ``fold(buf, t)`` for blocks of ``threads`` (a power of two): with
    each thread ``t`` of the block having stored its part in shared ``buf[t]``, it halves the
    buffer with ``kind``'s combine until ``buf[0]`` holds the block's result and returns that
    to every thread (all of which must call it: it synchronizes; ``buf`` is free again)."""
    bind_cuda(globals())
    combine = cuda.jit(device=True)(COMBINE[kind])

    @cuda.jit(device=True)
    def fold(buf, t):
        cuda.syncthreads()
        s = threads // 2
        while s > 0:
            if t < s:
                buf[t] = combine(buf[t], buf[t + s])
            cuda.syncthreads()
            s //= 2
        result = buf[0]
        cuda.syncthreads()
        return result
    return fold


@functools.lru_cache(maxsize=None)
def _tree_kernel(kind: str, acc_dtype: np.dtype, threads: int) -> Callable:
    import numba
    bind_cuda(globals())
    offset = offset_function()
    combine = cuda.jit(device=True)(COMBINE[kind])
    fold = block_fold(kind, threads)
    acc_type = numba.from_dtype(acc_dtype)

    @library_kernel
    def reduce(out, x, start, kept_shape, kept_strides, red_shape, red_strides, m, chunk,
               splits):
        # out[o * splits + c]: output o's chunk c of the reduced elements
        buf = cuda.shared.array(threads, acc_type)
        t = cuda.threadIdx.x
        for p in range(cuda.blockIdx.x, out.size, cuda.gridDim.x):
            o = p // splits
            c = p - o * splits
            base = offset(o, kept_shape, kept_strides)
            acc = start
            for r in range(c * chunk + t, min(m, (c + 1) * chunk), threads):
                acc = combine(acc, x[uint64(base + offset(r, red_shape, red_strides))])
            buf[t] = acc
            total = fold(buf, t)
            if t == 0:
                out[p] = total
    return reduce


@functools.lru_cache(maxsize=None)
def _line_kernel(kind: str) -> Callable:
    bind_cuda(globals())
    offset = offset_function()
    combine = cuda.jit(device=True)(COMBINE[kind])

    @library_kernel
    def reduce_lines(out, x, start, kept_shape, kept_strides, red_shape, red_strides, m, chunk,
                     splits):
        # out[c * outputs + o]: output o's chunk c (neighbouring threads, neighbouring outputs)
        outputs = out.size // splits
        for p in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            c = p // outputs
            o = p - c * outputs
            base = offset(o, kept_shape, kept_strides)
            acc = start
            for r in range(c * chunk, min(m, (c + 1) * chunk)):
                # (an unsigned index: see index.grid_stride_loop)
                acc = combine(acc, x[uint64(base + offset(r, red_shape, red_strides))])
            out[p] = acc
    return reduce_lines


def split_dims(shape: tuple, axes: Sequence[int]) -> tuple[tuple, tuple, tuple, tuple]:
    """``(kept_shape, kept_strides, reduced_shape, reduced_strides)`` of a C-contiguous
    ``shape``; adjacent dims of one kind become one dim, and empty parts one element, so
    kernels always get rank >= 1 tuples.

    >>> split_dims((2, 3, 4), (0, 2))
    ((3,), (4,), (2, 4), (12, 1))
    >>> split_dims((2, 3, 4), (1, 2))
    ((2,), (12,), (12,), (1,))
    """
    strides = layout.c_strides(shape)
    kept: list = []
    red: list = []
    for i, (d, s) in enumerate(zip(shape, strides)):
        group = red if i in axes else kept
        if group and group[-1][2] == i - 1:   # (the dim before is of this kind: one dim)
            group[-1] = (group[-1][0] * d, s, i)
        else:
            group.append((d, s, i))
    kept = kept or [(1, 0, 0)]
    red = red or [(1, 0, 0)]
    return (tuple(d for d, _, _ in kept), tuple(s for _, s, _ in kept),
            tuple(d for d, _, _ in red), tuple(s for _, s, _ in red))


def reduce(kind: str, x: Any, axes: Sequence[int] | None, keepdims: bool,
           acc_dtype: np.dtype | None = None) -> Any:
    """Reduces device array ``x`` over ``axes`` (None: all) with ``kind`` (sum, prod, max,
    min, all, any); the result has ``acc_dtype`` (default: ``x``'s).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(reduce("max", to_device(np.array([[1, 5], [7, 2]])), (1,), True))
    array([[5],
           [7]])
    """
    threads = config.THREADS_PER_BLOCK
    if threads & (threads - 1):
        raise ValueError(f"config.THREADS_PER_BLOCK must be a power of two for the tree "
                         f"reductions, got {threads}.")
    shape = tuple(x.shape)
    axes = tuple(range(len(shape))) if axes is None else tuple(a % len(shape) for a in axes)
    acc_dtype = np.dtype(acc_dtype or x.dtype)
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    out = empty(out_shape, acc_dtype)
    if out.size:
        source = x
        for bound, partial_shape, tail in _steps(kind, shape, axes, np.dtype(x.dtype), acc_dtype,
                                                 threads, config.MAX_BLOCKS):
            target = out if partial_shape is None else empty(partial_shape, acc_dtype)
            bound(target, source, *tail)
            source = target
    return out


@functools.lru_cache(maxsize=1024)
def _steps(kind: str, shape: tuple, axes: tuple, dtype: np.dtype, acc_dtype: np.dtype,
           threads: int, max_blocks: int) -> tuple:
    """The launches of a reduction, made once per signature (an eager op's host cost is
    otherwise mostly this planning): ``(bound launch, partial shape or None for the output,
    the launch's arguments after its output and source)`` in order, each reading the one
    before's output (the first reads the input). ``dtype`` and ``max_blocks`` only key the
    cache (the bound launches' argument types, the grids)."""
    steps: list = []
    outputs = int(np.prod([d for i, d in enumerate(shape) if i not in axes]))
    _plan(steps, kind, shape, axes, outputs, acc_dtype, threads, True)
    return tuple(steps)


def _plan(steps: list, kind: str, shape: tuple, axes: tuple, outputs: int,
          acc_dtype: np.dtype, threads: int, split: bool) -> None:
    kept_shape, kept_strides, red_shape, red_strides = split_dims(shape, axes)
    m = int(np.prod([shape[a] for a in axes])) if axes else 1
    # (lines where the innermost dim is kept, unless there are too few outputs to fill a warp)
    lines = m < threads or (kept_strides[-1] == 1 and outputs >= 32)
    splits = _splits(outputs, m, lines, threads) if split else 1
    partial_shape = None if splits == 1 else (splits, outputs) if lines else (outputs, splits)
    tail = (identity(kind, acc_dtype), kept_shape, kept_strides, red_shape, red_strides, m,
            -(-m // splits), splits)
    if lines:
        bound = Bound(_line_kernel(kind), grid(outputs * splits))
    else:
        blocks = max(1, min(outputs * splits, config.MAX_BLOCKS))
        bound = Bound(_tree_kernel(kind, acc_dtype, threads), (blocks, threads))
    steps.append((bound, partial_shape, tail))
    if partial_shape is not None:   # (the partials, reduced into the output in one more launch)
        _plan(steps, kind, partial_shape, (0,) if lines else (1,), outputs, acc_dtype, threads,
              False)


def _splits(outputs: int, m: int, lines: bool, threads: int) -> int:
    """Into how many chunks the ``m`` reduced elements of each of ``outputs`` outputs are cut:
    enough partials to fill the GPU (``config.MAX_BLOCKS`` blocks of tree reductions, or as
    many threads for lines), none shorter than 8 elements per thread, and at most
    ``4 * threads`` (the partials are reduced in one more launch).

    >>> _splits(1, 1 << 20, False, 256), _splits(4096, 1024, True, 256)
    (512, 64)
    >>> _splits(500, 10**4, False, 256), _splits(2, 10**7, True, 256)
    (3, 1024)
    """
    if lines:
        wanted, longest = -(-config.MAX_BLOCKS * threads // outputs), -(-m // 8)
    else:
        wanted, longest = -(-config.MAX_BLOCKS // outputs), -(-m // (8 * threads))
    return max(1, min(wanted, longest, 4 * threads))


@functools.lru_cache(maxsize=None)
def _mean_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def finish(out, total, count, is_float):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            if is_float:
                out[i] = total[i] / count
            else:
                # Integer means truncate toward zero, as TensorFlow's do.
                s = total[i]
                q = (s if s >= 0 else -s) // count
                out[i] = q if s >= 0 else -q
    return finish


def mean(x: Any, axes: Sequence[int] | None, keepdims: bool) -> Any:
    """``reduce_mean``: floats sum in their dtype, integers in int64, then one division.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(mean(to_device(np.array([-7, 2], np.int32)), None, False))   # -5 / 2
    array(-2, dtype=int32)
    """
    is_float = x.dtype.kind in "fc"  # (complex sums stay complex too)
    total = reduce("sum", x, axes, keepdims, x.dtype if is_float else np.int64)
    out = empty(total.shape, x.dtype)
    count = x.size // max(total.size, 1) if x.size else 1
    if out.size:
        divisor = x.dtype.type(count) if is_float else np.int64(max(count, 1))
        launch(_mean_kernel(), grid(out.size), out, total, divisor, is_float)
    return out


# ------------------------------------------------------------------- lines: arg and scan

def _lines(shape: tuple, axis: int) -> tuple[int, int, int]:
    """``(outer, n, inner)``: the input as lines of length n along ``axis``."""
    return (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:])))


@functools.lru_cache(maxsize=None)
def _arg_kernel(largest: bool) -> Callable:
    bind_cuda(globals())

    @library_kernel
    def arg(out, x, n, inner):
        for line in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            base = (line // inner) * n * inner + line % inner
            best = x[base]
            k = 0
            # NumPy's rule: the first NaN wins; otherwise the first extreme value.
            if best == best:
                for j in range(1, n):
                    v = x[base + j * inner]
                    if v != v:
                        k = j
                        break
                    if (v > best) if largest else (v < best):
                        best = v
                        k = j
            out[line] = k
    return arg


def arg_extreme(x: Any, axis: int, output_type: np.dtype, largest: bool) -> Any:
    """``argmax`` / ``argmin`` along ``axis``; an empty axis raises like the reference.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(arg_extreme(to_device(np.array([[1, 9, 9], [3, 0, 3]])), 1, np.int32, True))
    array([1, 0], dtype=int32)
    """
    shape = tuple(x.shape)
    axis %= len(shape)
    if shape[axis] == 0:
        raise ValueError("Reduction axis is empty")
    outer, n, inner = _lines(shape, axis)
    out = empty(shape[:axis] + shape[axis + 1:], output_type)
    if out.size:
        launch(_arg_kernel(largest), grid(out.size), out, x, n, inner)
    return out


@functools.lru_cache(maxsize=None)
def _scan_kernels(product: bool) -> tuple[Callable, Callable, Callable]:
    """The three phases of a chunked scan: chunk totals, an exclusive scan of each line's
    chunk totals, and the rescan of every chunk from its offset."""
    bind_cuda(globals())

    @cuda.jit(device=True)
    def position(line, j, n, inner, reverse):
        # The buffer offset of the j-th element of a line in scan order.
        return (line // inner) * n * inner + line % inner + ((n - 1 - j) if reverse else j) * inner

    @library_kernel
    def chunk_totals(totals, x, n, inner, size, chunks, start, reverse):
        for w in range(cuda.grid(1), totals.size, cuda.gridsize(1)):
            line = w // chunks
            acc = start
            for j in range((w % chunks) * size, min((w % chunks + 1) * size, n)):
                v = x[position(line, j, n, inner, reverse)]
                acc = acc * v if product else acc + v
            totals[w] = acc

    @library_kernel
    def chunk_offsets(totals, chunks, start):
        for line in range(cuda.grid(1), totals.size // chunks, cuda.gridsize(1)):
            acc = start
            for c in range(line * chunks, (line + 1) * chunks):
                t = totals[c]
                totals[c] = acc
                acc = acc * t if product else acc + t

    @library_kernel
    def rescan(out, x, offsets, n, inner, size, chunks, exclusive, reverse):
        for w in range(cuda.grid(1), offsets.size, cuda.gridsize(1)):
            line = w // chunks
            acc = offsets[w]
            for j in range((w % chunks) * size, min((w % chunks + 1) * size, n)):
                p = position(line, j, n, inner, reverse)
                if exclusive:
                    out[p] = acc
                acc = acc * x[p] if product else acc + x[p]
                if not exclusive:
                    out[p] = acc
    return chunk_totals, chunk_offsets, rescan


def scan(x: Any, axis: int, exclusive: bool, reverse: bool, product: bool) -> Any:
    """``cumsum`` / ``cumprod`` along ``axis``, accumulating in the input's dtype.

    Each line is cut into as many chunks as the launch has threads to spare; a chunk is
    scanned sequentially by one thread, after a first pass has added up the chunks before
    it. With at least as many lines as threads that is one chunk per line (NumPy's order);
    otherwise float sums associate differently from NumPy's in the last bits.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(scan(to_device(np.array([1, 2, 3])), 0, exclusive=True, reverse=True,
    ...              product=False))
    array([5, 3, 0])
    """
    from stagecraft.backends.numba_cuda.kernels.shape import full
    shape = tuple(x.shape)
    axis %= len(shape)
    outer, n, inner = _lines(shape, axis)
    lines = outer * inner
    out = empty(shape, x.dtype)
    if out.size == 0:
        return out
    blocks, threads = grid(out.size)
    chunks = max(1, min(n, blocks * threads // lines))
    size = -(-n // chunks)
    chunks = -(-n // size)
    start = x.dtype.type(1 if product else 0)
    totals_kernel, offsets_kernel, rescan_kernel = _scan_kernels(product)
    if chunks == 1:
        offsets = full((lines,), start, x.dtype)
    else:
        offsets = empty((lines * chunks,), x.dtype)
        launch(totals_kernel, grid(offsets.size), offsets, x, n, inner, size, chunks, start,
               bool(reverse))
        launch(offsets_kernel, grid(lines), offsets, chunks, start)
    launch(rescan_kernel, grid(offsets.size), out, x, offsets, n, inner, size, chunks,
           bool(exclusive), bool(reverse))
    return out


def argsort(x: Any, axis: int, descending: bool) -> Any:
    """``argsort``: stable int32 sorting positions along ``axis``, one thread per line (an
    insertion sort: lines are short in the programs that sort; NaN counts as the largest).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(argsort(to_device(np.array([3.0, 1.0, 2.0, 1.0])), 0, False)).tolist()
    [1, 3, 2, 0]
    """
    shape = tuple(x.shape)
    axis %= len(shape)
    outer, n, inner = _lines(shape, axis)
    out = empty(shape, np.int32)
    if out.size == 0:
        return out
    launch(_argsort_kernel(), grid(outer * inner), out, x, n, inner, bool(descending))
    return out


@functools.lru_cache(maxsize=None)
def _argsort_kernel() -> Callable:
    bind_cuda(globals())

    @cuda.jit(device=True)
    def before(a, b, descending):
        # strict order, NaN largest: equal values never move past each other (stable)
        if descending:
            return a > b or (a != a and b == b)
        return a < b or (b != b and a == a)

    @library_kernel
    def kernel(out, x, n, inner, descending):
        for line in range(cuda.grid(1), out.size // max(n, 1), cuda.gridsize(1)):
            base = (line // inner) * n * inner + line % inner
            for j in range(n):
                v = x[base + j * inner]
                k = j
                while k > 0 and before(v, x[base + out[base + (k - 1) * inner] * inner],
                                       descending):
                    out[base + k * inner] = out[base + (k - 1) * inner]
                    k -= 1
                out[base + k * inner] = j
    return kernel


def sum_like(x: Any, like_shape: tuple) -> Any:
    """``sum_like``: sums the broadcast dims of ``x`` away, leaving ``like_shape``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(sum_like(to_device(np.ones((2, 3, 4))), (3, 1)))
    array([[8.],
           [8.],
           [8.]])
    """
    lead = x.ndim - len(like_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(like_shape)
                                      if d == 1 and tuple(x.shape)[lead + i] != 1)
    if not axes:
        return reshape(x, tuple(like_shape)) if tuple(x.shape) != tuple(like_shape) else x
    return reshape(reduce("sum", x, axes, True), tuple(like_shape))
