"""The softmax family on the device (``ir/ops/softmax.py``): one thread per line finds the
line's maximum and its sum of exponentials, then writes the line's softmax or log-softmax, or,
for the fused sparse cross-entropy over ``[batch, classes]`` logits, the row's loss or its
gradient row, in the reference kernels' order. One thread per line suits short lines (a
batch's classes, attention rows); a softmax over lines longer than ``ONE_THREAD_MAX`` runs as
the library's block reductions and elementwise kernels instead, since a thread would walk
the whole line alone (sums then differ from the reference's order in the last bits, as a
tree's do). The cross-entropy keeps one thread per row.

A label outside ``[0, classes)`` makes that row NaN (loss and gradient), as TensorFlow's GPU
kernel does: raising would need the host to read a flag after every step, waiting for the GPU.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda.kernels import elementwise, reduce
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty, flat
from stagecraft.ir import dtypes as dt

# numba.cuda, bound by the kernel factory on first use (see launch.bind_cuda).
cuda: Any = None
# Longer softmax lines take the library's reductions and elementwise kernels (five launches,
# six for log_softmax) instead of one thread per line.
ONE_THREAD_MAX = 1024


@functools.lru_cache(maxsize=None)
def _kernels() -> tuple[Callable, Callable, Callable]:
    bind_cuda(globals())

    @cuda.jit
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

    @cuda.jit
    def loss(out, logits, labels, classes):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            label = labels[i]
            if label < 0 or label >= classes:
                out[i] = math.nan
                continue
            top, total = shifted_row(logits, i * classes, classes)
            out[i] = math.log(total) - (logits[i * classes + label] - top)

    @cuda.jit
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


def softmax(x: Any, axis: int, log: bool) -> Any:
    """``softmax`` (or ``log_softmax`` when ``log``) of a device array along ``axis``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(softmax(to_device(np.array([[1.0, 1.0], [0.0, 0.0]])), 0, False)).tolist()
    [[0.7310585786300049, 0.7310585786300049], [0.2689414213699951, 0.2689414213699951]]
    """
    shape = tuple(x.shape)
    axis %= len(shape)
    n, inner = shape[axis], int(np.prod(shape[axis + 1:]))
    if n > ONE_THREAD_MAX:
        return _by_reductions(x, axis, log)
    out = empty(shape, x.dtype)
    count = int(np.prod(shape)) // max(n, 1)
    if n:
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
    launch_over(_kernels()[2], rows, flat(out), g, flat(logits), labels, classes, one)
    return out
