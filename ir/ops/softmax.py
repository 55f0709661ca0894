"""The softmax family, each op one pass per line where composites took half a dozen ops:
``softmax`` and ``log_softmax`` along an axis (TensorFlow's Softmax and LogSoftmax, shifted by
the line's maximum), and the fused softmax cross-entropy with integer labels (TensorFlow's
SparseSoftmaxCrossEntropyWithLogits): ``sparse_softmax_cross_entropy_with_logits`` gives each
row's ``logsumexp(logits) - logits[label]`` in one pass, and its ``_grad`` gives
``grad * (softmax(logits) - one_hot(label))``, so a classifier's loss and its gradient are one
kernel each instead of a dozen.

The cross-entropy's logits are ``[batch, classes]`` and its labels ``[batch]``, as in
TensorFlow's kernel (the frontend views other ranks as these). A label outside
``[0, classes)`` raises on the CPU, as TensorFlow's CPU kernel does; the GPU kernels give NaN
for that row instead, as TensorFlow's GPU kernel does, because checking would make the host
wait for the GPU at every step.
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops.infer import check_dtype, check_unified, fail, normalize_axis
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

# ------------------------------------------------------------------ softmax, log_softmax

def _softmax_infer(op: str):
    def infer(types, axis):
        d = check_unified(op, ("logits",), types, (0,), dt.FLOATS)
        if types[0].rank == 0:
            raise fail(op, "logits must have at least one dimension, got a scalar.")
        normalize_axis(op, axis, types[0].rank)
        return [TensorType(d, types[0].shape)]
    return infer


def _line_shifted(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` minus the maximum of its line along ``axis``."""
    if x.ndim == 0:   # (NumPy would reduce a scalar; bind reports inference's message)
        raise ValueError("logits must have at least one dimension")
    return x - x.max(axis=axis, keepdims=True) if x.size else x


def _softmax_kernel(logits, axis):
    e = np.exp(_line_shifted(logits, axis))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax_kernel(logits, axis):
    z = _line_shifted(logits, axis)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _softmax_examples(rng, d):
    return [Example((values(rng, d, s, -3, 3),), {"axis": a})
            for s, a in [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 1, 3), -1),
                         ((2, 40), -1)]]   # (40: the GPU's block-per-row kernels)


softmax_op = OpDef(
    name="softmax", kind=Kind.REDUCE, inputs=("logits",), attrs=("axis",),
    infer=_softmax_infer("softmax"), kernel=_softmax_kernel, dtypes=dt.FLOATS, unify=(0,),
    examples=_softmax_examples,
    doc="exp(logits) / sum(exp(logits)) along `axis`, shifted by the line's maximum.")

log_softmax_op = OpDef(
    name="log_softmax", kind=Kind.REDUCE, inputs=("logits",), attrs=("axis",),
    infer=_softmax_infer("log_softmax"), kernel=_log_softmax_kernel, dtypes=dt.FLOATS,
    unify=(0,), examples=_softmax_examples,
    doc="logits - log(sum(exp(logits))) along `axis`, shifted by the line's maximum.")


# ------------------------------------------------- sparse softmax cross-entropy with logits

NAME = "sparse_softmax_cross_entropy_with_logits"
GRAD = NAME + "_grad"
# TensorFlow's CPU message for a label out of range, filled with the label and the classes
# (the staged CPU code builds it from these pieces at run time).
LABEL_ERROR = ("Received a label value of {} which is outside the valid range of [0, {}). "
               "Labels must be class indices, one per row of logits.")


def _rows(op: str, logits: TensorType, labels: TensorType) -> int | None:
    """The batch size that ``logits`` [batch, classes] and ``labels`` [batch] agree on."""
    check_dtype(op, "labels", labels, (dt.int32, dt.int64))   # (as TensorFlow's kernel)
    if logits.shape is not None and len(logits.shape) != 2:
        raise fail(op, f"'logits' must be a matrix [batch, classes], got shape "
                       f"{format_dims(logits.shape)}.")
    if labels.shape is not None and len(labels.shape) != 1:
        raise fail(op, f"'labels' must be a vector [batch], got shape "
                       f"{format_dims(labels.shape)}.")
    if logits.shape is not None and logits.shape[1] == 0 and logits.shape[0] != 0:
        raise fail(op, f"Must have at least one class, but got logits shape "
                       f"{format_dims(logits.shape)}.")
    a = None if logits.shape is None else logits.shape[0]
    b = None if labels.shape is None else labels.shape[0]
    if a is not None and b is not None and a != b:
        raise fail(op, f"logits and labels must have the same first dimension, got logits "
                       f"shape {format_dims(logits.shape)} and labels shape "
                       f"{format_dims(labels.shape)}.")
    return a if a is not None else b


def _infer(types):
    d = check_unified(NAME, ("logits", "labels"), types, (0,), dt.FLOATS)
    return [TensorType(d, (_rows(NAME, types[0], types[1]),))]


def _grad_infer(types):
    d = check_unified(GRAD, ("grad", "logits", "labels"), types, (0, 1), dt.FLOATS)
    rows = _rows(GRAD, types[1], types[2])
    g = types[0].shape
    if g is not None:
        if len(g) != 1 or (None not in (g[0], rows) and g[0] != rows):
            raise fail(GRAD, f"'grad' must be a vector of one value per row of logits "
                             f"{format_dims(types[1].shape)}, got shape {format_dims(g)}.")
        rows = g[0] if rows is None else rows
    classes = None if types[1].shape is None else types[1].shape[1]
    return [TensorType(d, (rows, classes))]


def check_labels(labels: np.ndarray, classes: int) -> None:
    """Raises TensorFlow's CPU error for the first label outside ``[0, classes)`` (bind and
    the staged backends put the op's name and the user's line around it).

    >>> check_labels(np.array([0, 3]), 3)
    Traceback (most recent call last):
    stagecraft.ir.errors.InvalidArgumentError: Received a label value of 3 which is outside \
the valid range of [0, 3). Labels must be class indices, one per row of logits.
    """
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        raise InvalidArgumentError(LABEL_ERROR.format(int(labels[bad][0]), classes))


def _shifted(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``logits`` minus each row's maximum, after the labels are checked."""
    if logits.shape[1] == 0 and logits.shape[0]:   # (bind reports inference's message)
        raise ValueError("no classes")
    check_labels(labels, logits.shape[1])
    if logits.shape[0] == 0:
        return logits
    return logits - logits.max(axis=1, keepdims=True)


def _kernel(logits, labels):
    z = _shifted(logits, labels)
    picked = np.take_along_axis(z, labels.astype(np.intp)[:, None], 1)[:, 0]
    return (np.log(np.exp(z).sum(axis=1)) - picked).astype(logits.dtype)


def _grad_kernel(grad, logits, labels):
    e = np.exp(_shifted(logits, labels))
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels.astype(np.intp)] -= 1
    return (grad[:, None] * p).astype(logits.dtype)


def _labels(rng, n: int, classes: int, d) -> np.ndarray:
    return rng.integers(0, classes, n).astype(d)


def _examples(rng, d, with_grad: bool):
    out = []
    for (n, c), ld in [((4, 5), np.int32), ((1, 3), np.int64), ((3, 1), np.int32),
                       ((3, 40), np.int64)]:   # (40: the GPU's block-per-row kernels)
        x = values(rng, d, (n, c), -3, 3)
        g = (values(rng, d, (n,)),) if with_grad else ()
        out.append(Example(g + (x, _labels(rng, n, c, ld))))
    return out


sparse_softmax_cross_entropy_op = OpDef(
    name=NAME, kind=Kind.REDUCE, inputs=("logits", "labels"), attrs=(), infer=_infer,
    kernel=_kernel, dtypes=dt.FLOATS, unify=(0,),
    examples=lambda rng, d: _examples(rng, d, False),
    doc="Each row's softmax cross-entropy against its integer label: "
        "logsumexp(logits[i]) - logits[i, labels[i]]; labels outside [0, classes) raise on "
        "the CPU and give NaN on the GPU (as in TensorFlow).")

sparse_softmax_cross_entropy_grad_op = OpDef(
    name=GRAD, kind=Kind.REDUCE, inputs=("grad", "logits", "labels"), attrs=(),
    infer=_grad_infer, kernel=_grad_kernel, dtypes=dt.FLOATS, unify=(0, 1),
    examples=lambda rng, d: _examples(rng, d, True),
    doc="The gradient of sparse_softmax_cross_entropy_with_logits in its logits: "
        "grad[i] * (softmax(logits[i]) - one_hot(labels[i])).")
