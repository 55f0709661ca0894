"""Numba kernels of the softmax family (``ir/ops/softmax.py``), in the logits' dtype, each line
shifted by its maximum as the reference kernels are: ``softmax3``/``log_softmax3`` along
axis 1 of a 3-D view (outer, axis, inner), and the fused sparse cross-entropy, one pass per
row over ``[batch, classes]`` logits. Staged code checks the labels first with
``first_bad_label`` and raises the reference's error there, naming the user's line
(TensorFlow's CPU behaviour); the kernels check again, so that no call reads outside a row."""
from __future__ import annotations

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", nogil=True)


@numba.njit(**_JIT)
def softmax3(x3, log):
    """Softmax (or log-softmax when ``log``) of each line ``x3[i, :, k]``."""
    n0, n1, n2 = x3.shape
    out = np.empty((n0, n1, n2), x3.dtype)
    if n1 == 0:
        return out
    for i in range(n0):
        for k in range(n2):
            top = x3[i, 0, k]
            for j in range(1, n1):
                top = max(top, x3[i, j, k])
            total = top - top   # zero in the logits' dtype (NaN for an infinite maximum)
            for j in range(n1):
                e = np.exp(x3[i, j, k] - top)
                out[i, j, k] = x3[i, j, k] - top if log else e
                total += e
            if log:
                total = np.log(total)
            for j in range(n1):
                out[i, j, k] = out[i, j, k] - total if log else out[i, j, k] / total
    return out


@numba.njit(**_JIT)
def first_bad_label(labels, classes):
    """The position of the first label outside ``[0, classes)``, or -1."""
    for i in range(labels.shape[0]):
        if labels[i] < 0 or labels[i] >= classes:
            return i
    return -1


@numba.njit(**_JIT)
def _check_labels(labels, classes):
    if first_bad_label(labels, classes) >= 0:
        raise ValueError("a label is outside the valid range [0, classes)")


@numba.njit(**_JIT)
def _shifted_row(logits, i):
    """Row i's maximum and its sum of exp(logit - maximum)."""
    top = logits[i, 0]
    for j in range(1, logits.shape[1]):
        top = max(top, logits[i, j])
    total = top - top   # zero in the logits' dtype (NaN for an infinite maximum)
    for j in range(logits.shape[1]):
        total += np.exp(logits[i, j] - top)
    return top, total


@numba.njit(**_JIT)
def sparse_xent(logits, labels):
    """Each row's ``log(sum(exp(logits - top))) - (logits[label] - top)``."""
    _check_labels(labels, logits.shape[1])
    out = np.empty(logits.shape[0], logits.dtype)
    for i in range(logits.shape[0]):
        top, total = _shifted_row(logits, i)
        out[i] = np.log(total) - (logits[i, labels[i]] - top)
    return out


@numba.njit(**_JIT)
def sparse_xent_grad(grad, logits, labels):
    """``grad[i] * (softmax(logits[i]) - one_hot(labels[i]))``."""
    _check_labels(labels, logits.shape[1])
    out = np.empty(logits.shape, logits.dtype)
    one = np.ones(1, logits.dtype)[0]   # float32 math stays float32
    for i in range(logits.shape[0]):
        top, total = _shifted_row(logits, i)
        for j in range(logits.shape[1]):
            p = np.exp(logits[i, j] - top) / total
            out[i, j] = grad[i] * (p - one if j == labels[i] else p)
    return out
