"""The softmax family on the device (``ir/ops/softmax.py``): each line's maximum and sum of
exponentials, then the line's softmax or log-softmax or, for the fused sparse cross-entropy
over ``[batch, classes]`` logits, the row's loss or its gradient row.

Two shapes of work, chosen by the line's length:
- lines along the last axis at least ``ROW_BLOCK_MIN`` long (a batch's classes, attention
  rows) get a block of threads each: the threads stride over the line and combine the maximum
  and the sum in shared memory, so a 1024x1000 loss keeps the whole GPU busy instead of 1024
  threads walking 1000 elements each;
- shorter lines, and lines along another axis, get one thread each, in the reference
  kernels' order; a softmax over such lines longer than ``ONE_THREAD_MAX`` runs as the
  library's block reductions and elementwise kernels instead.
Sums in a block or a reduction tree differ from the reference's order in the last bits.

A label outside ``[0, classes)`` makes that row NaN (loss and gradient), as TensorFlow's GPU
kernel does: raising would need the host to read a flag after every step, waiting for the GPU.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda import config
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.kernels import elementwise, reduce
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch, launch_over
from stagecraft.backends.numba_cuda.memory import empty, flat
from stagecraft.ir import dtypes as dt

# numba.cuda, bound by the kernel factory on first use (see launch.bind_cuda).
cuda: Any = None
# Lines along the last axis at least this long get a block of threads each.
ROW_BLOCK_MIN = 32
# Softmax lines along another axis longer than this take the library's reductions and
# elementwise kernels (five launches, six for log_softmax) instead of one thread per line.
ONE_THREAD_MAX = 1024


@functools.lru_cache(maxsize=None)
def _kernels() -> tuple[Callable, Callable, Callable]:
    bind_cuda(globals())

    @library_kernel
    def lines(out, x, n, inner, count, log):
        for line in range(cuda.grid(1), count, cuda.gridsize(1)):
            base = (line // inner) * n * inner + line % inner
            top = x[base]
            for j in range(1, n):
                top = max(top, x[base + j * inner])
            total = top - top   # zero in the logits' dtype (NaN for an infinite maximum)
            for j in range(n):
                at = base + j * inner
                e = math.exp(x[at] - top)
                out[at] = x[at] - top if log else e
                total += e
            if log:
                total = math.log(total)
            for j in range(n):
                at = base + j * inner
                out[at] = out[at] - total if log else out[at] / total

    @cuda.jit(device=True)
    def shifted_row(logits, base, classes):
        """The row's maximum and its sum of exp(logit - maximum)."""
        top = logits[base]
        for j in range(1, classes):
            top = max(top, logits[base + j])
        total = top - top   # zero in the logits' dtype (NaN for an infinite maximum)
        for j in range(classes):
            total += math.exp(logits[base + j] - top)
        return top, total

    @library_kernel
    def loss(out, logits, labels, classes):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            label = labels[i]
            if label < 0 or label >= classes:
                out[i] = math.nan
                continue
            top, total = shifted_row(logits, i * classes, classes)
            out[i] = math.log(total) - (logits[i * classes + label] - top)

    @library_kernel
    def grad(out, g, logits, labels, classes, one):
        for i in range(cuda.grid(1), labels.size, cuda.gridsize(1)):
            base, label = i * classes, labels[i]
            if label < 0 or label >= classes:
                for j in range(classes):
                    out[base + j] = math.nan
                continue
            top, total = shifted_row(logits, base, classes)
            for j in range(classes):
                p = math.exp(logits[base + j] - top) / total
                out[base + j] = g[i] * (p - one if j == label else p)
    return lines, loss, grad


@functools.lru_cache(maxsize=None)
def _row_kernels(dtype: np.dtype, threads: int) -> tuple[Callable, Callable, Callable]:
    """Block-per-row kernels for ``dtype`` and a power-of-two block of ``threads``."""
    import numba
    bind_cuda(globals())
    acc = numba.from_dtype(dtype)
    fold_max, fold_sum = reduce.block_fold("max", threads), reduce.block_fold("sum", threads)

    @cuda.jit(device=True)
    def block_max_sum(x, base, n, buf, zero):
        """Row ``x[base:base + n]``'s maximum and sum of exp(x - maximum), for every thread
        of the block (all of which must call it: it synchronizes)."""
        t = cuda.threadIdx.x
        top = x[base]
        for j in range(t, n, threads):
            top = max(top, x[base + j])
        buf[t] = top
        top = fold_max(buf, t)
        total = zero
        for j in range(t, n, threads):
            total += math.exp(x[base + j] - top)
        buf[t] = total
        return top, fold_sum(buf, t)

    @library_kernel
    def softmax_rows(out, x, n, rows, log, zero):
        buf = cuda.shared.array(threads, acc)
        t = cuda.threadIdx.x
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            base = row * n
            top, total = block_max_sum(x, base, n, buf, zero)
            if log:
                total = math.log(total)
            for j in range(t, n, threads):
                z = x[base + j] - top
                out[base + j] = z - total if log else math.exp(z) / total

    # A row's label decides for the whole block, so a bad row skips block_max_sum's
    # synchronizations in every thread alike.
    @library_kernel
    def loss_rows(out, logits, labels, classes, zero):
        buf = cuda.shared.array(threads, acc)
        for i in range(cuda.blockIdx.x, labels.size, cuda.gridDim.x):
            label = labels[i]
            if label < 0 or label >= classes:
                if cuda.threadIdx.x == 0:
                    out[i] = math.nan
                continue
            top, total = block_max_sum(logits, i * classes, classes, buf, zero)
            if cuda.threadIdx.x == 0:
                out[i] = math.log(total) - (logits[i * classes + label] - top)

    @library_kernel
    def grad_rows(out, g, logits, labels, classes, one, zero):
        buf = cuda.shared.array(threads, acc)
        t = cuda.threadIdx.x
        for i in range(cuda.blockIdx.x, labels.size, cuda.gridDim.x):
            base, label = i * classes, labels[i]
            if label < 0 or label >= classes:
                for j in range(t, classes, threads):
                    out[base + j] = math.nan
                continue
            top, total = block_max_sum(logits, base, classes, buf, zero)
            for j in range(t, classes, threads):
                p = math.exp(logits[base + j] - top) / total
                out[base + j] = g[i] * (p - one if j == label else p)
    return softmax_rows, loss_rows, grad_rows


def _rows_grid(rows: int, n: int) -> tuple[int, int]:
    """``(blocks, threads)`` for block-per-row kernels: a power-of-two block no wider than
    the row needs (and no wider than ``config.THREADS_PER_BLOCK``)."""
    threads = min(config.THREADS_PER_BLOCK, max(32, 1 << (n - 1).bit_length()))
    return max(1, min(rows, config.MAX_BLOCKS)), threads


def _row_kernel(k: int, x: Any, rows: int, n: int) -> tuple[Callable, tuple[int, int]]:
    """Block-per-row kernel ``k`` (0 softmax, 1 loss, 2 gradient) for ``x``'s dtype and its
    grid."""
    dims = _rows_grid(rows, n)
    return _row_kernels(np.dtype(x.dtype), dims[1])[k], dims


def softmax(x: Any, axis: int, log: bool) -> Any:
    """``softmax`` (or ``log_softmax`` when ``log``) of a device array along ``axis``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(softmax(to_device(np.array([[1.0, 1.0], [0.0, 0.0]])), 0, False)).tolist()
    [[0.7310585786300049, 0.7310585786300049], [0.2689414213699951, 0.2689414213699951]]
    """
    shape = tuple(x.shape)
    axis %= len(shape)
    n, inner = shape[axis], int(np.prod(shape[axis + 1:]))
    out = empty(shape, x.dtype)
    count = int(np.prod(shape)) // max(n, 1)
    if not n or not count:
        return out
    if inner == 1 and n >= ROW_BLOCK_MIN:
        kernel, dims = _row_kernel(0, x, count, n)
        launch(kernel, dims, flat(out), flat(x), n, count, bool(log), x.dtype.type(0))
    elif n > ONE_THREAD_MAX:
        return _by_reductions(x, axis, log)
    else:
        launch_over(_kernels()[0], count, flat(out), flat(x), n, inner, count, bool(log))
    return out


def _by_reductions(x: Any, axis: int, log: bool) -> Any:
    """:func:`softmax` of long lines: block reductions for the maximum and the sum."""
    d, shape = dt.from_numpy(x.dtype), tuple(x.shape)
    top = reduce.reduce("max", x, (axis,), True)
    z = elementwise.run("subtract", [x, top], d, shape)
    e = elementwise.run("exp", [z], d, shape)
    total = reduce.reduce("sum", e, (axis,), True)
    if log:
        return elementwise.run("subtract", [z, elementwise.run("log", [total], d, total.shape)],
                               d, shape)
    return elementwise.run("divide", [e, total], d, shape)


def sparse_softmax_cross_entropy(logits: Any, labels: Any) -> Any:
    """Each row's ``logsumexp(logits[i]) - logits[i, labels[i]]`` (NaN for a label out of
    range).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([[0.0, 0.0], [2.0, 0.0]]))
    >>> to_host(sparse_softmax_cross_entropy(x, to_device(np.array([1, 2])))).round(4)
    array([0.6931,    nan])
    """
    rows, classes = logits.shape
    out = empty((rows,), logits.dtype)
    if rows and classes >= ROW_BLOCK_MIN:
        kernel, dims = _row_kernel(1, logits, rows, classes)
        launch(kernel, dims, out, flat(logits), labels, classes, logits.dtype.type(0))
    else:
        launch_over(_kernels()[1], rows, out, flat(logits), labels, classes)
    return out


def sparse_softmax_cross_entropy_grad(g: Any, logits: Any, labels: Any) -> Any:
    """``g[i] * (softmax(logits[i]) - one_hot(labels[i]))`` (a NaN row for a label out of
    range).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([[0.0, 0.0]]))
    >>> to_host(sparse_softmax_cross_entropy_grad(to_device(np.array([2.0])), x,
    ...                                           to_device(np.array([1])))).tolist()
    [[1.0, -1.0]]
    """
    rows, classes = logits.shape
    out = empty((rows, classes), logits.dtype)
    one = logits.dtype.type(1)   # of the logits' dtype: float32 math stays float32
    if rows and classes >= ROW_BLOCK_MIN:
        kernel, dims = _row_kernel(2, logits, rows, classes)
        launch(kernel, dims, flat(out), g, flat(logits), labels, classes, one,
               logits.dtype.type(0))
    else:
        launch_over(_kernels()[2], rows, flat(out), g, flat(logits), labels, classes, one)
    return out
