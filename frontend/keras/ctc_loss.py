"""Keras's connectionist temporal classification loss (``keras.losses.ctc`` and ``CTC``,
Graves et al. 2006), composed from existing ops: the forward (alpha) recursion over the
blank-interleaved labels runs in log space in one ``while_loop`` over time, so it stages and
differentiates like any other loop. As Keras: ``y_pred`` holds logits ``(batch, time,
classes)``, class 0 is the blank, and ``y_true`` holds labels ``(batch, max_label_length)``
padded with -1 (every time step of ``y_pred`` counts)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.basic_losses import LossFunctionWrapper, Reduction
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops.tensor_array import TensorArray
from stagecraft.staging.while_loop import while_loop

__all__ = ["CTC", "ctc"]

# "Impossible" in log space: finite, so sums and gradients of unreachable states stay 0, not NaN.
_NEG = -1e30


def _log_add3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    top = _m.maximum(_m.maximum(a, b), c)
    total = _m.add(_m.add(_m.exp(_m.subtract(a, top)), _m.exp(_m.subtract(b, top))),
                   _m.exp(_m.subtract(c, top)))
    return _m.add(top, _m.log(total))


def _shift(x: Tensor, k: int) -> Tensor:
    """``x`` moved ``k`` places right along the last axis, ``_NEG`` coming in."""
    pad = _m.add(_m.multiply(x[:, :k], 0.0), _NEG)
    return _a.concat([pad, x[:, :-k]], axis=1)


def ctc(y_true: Any, y_pred: Any) -> Tensor:
    """The CTC loss of each example: ``-log p(labels | logits)``, summed over every
    alignment of the labels to the time steps (blank = class 0; labels padded with -1).

    >>> import stagecraft as tf
    >>> logits = tf.zeros([1, 2, 2])  # two steps, classes {blank, 1}, uniform
    >>> [round(v, 4) for v in tf.keras.losses.ctc([[1]], logits).numpy().tolist()]
    [0.2877]
    """
    y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = _m.cast(y_pred, _dt.float32)
    labels = _m.cast(y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true),
                     _dt.int32)
    if y_pred.shape.rank != 3 or labels.shape.rank != 2:
        raise ValueError(f"keras.losses.ctc: expected y_pred (batch, time, classes) and y_true "
                         f"(batch, max_label_length); got {y_pred.shape} and {labels.shape}.")
    classes = y_pred.shape[-1]
    if classes is None:
        raise ValueError("keras.losses.ctc: the number of classes (last axis of y_pred) must "
                         "be known.")
    dtype = y_pred.dtype
    log_probs = _nn.log_softmax(y_pred, axis=-1)
    valid = _m.not_equal(labels, -1)
    label_length = _m.reduce_sum(_m.cast(valid, _dt.int32), axis=1)
    labels = _m.where(valid, labels, _m.multiply(labels, 0))
    # Blank-interleaved labels: [0, l1, 0, l2, ..., lL, 0], S = 2L + 1 states.
    shape = _a.shape(labels)
    batch, max_len = shape[0], shape[1]
    blanks = _a.zeros(_a.stack([batch, max_len]), dtype=_dt.int32)
    ext = _a.reshape(_a.stack([blanks, labels], axis=2), _a.stack([batch, 2 * max_len]))
    ext = _a.concat([ext, _a.zeros(_a.stack([batch, 1]), dtype=_dt.int32)], axis=1)
    # Emission log-probabilities of each state at each step, time-major: (T, batch, S).
    hot = _a.one_hot(ext, classes, dtype=dtype)
    emissions = _a.transpose(_m.matmul(log_probs, hot, transpose_b=True), [1, 0, 2])
    # A state may skip the blank before it when its label differs from the one two back.
    same = _m.equal(ext[:, 2:], ext[:, :-2])
    skip = _m.logical_and(_m.not_equal(ext[:, 2:], 0), _m.logical_not(same))
    skip = _a.concat([_m.cast(_a.zeros(_a.stack([batch, 2])), _dt.bool_), skip], axis=1)
    states = _a.shape(ext)[1]
    position = _a.reshape(_a.range(0, states), [1, -1])
    start = _m.logical_or(_m.equal(position, 0), _m.logical_and(
        _m.equal(position, 1), _a.expand_dims(_m.greater(label_length, 0), 1)))
    first = emissions[0]
    alpha = _m.where(start, first, _m.add(_m.multiply(first, 0.0), _NEG))
    time = _a.shape(emissions)[0]
    steps = TensorArray(dtype, size=time).unstack(emissions)

    def body(t: Tensor, alpha: Tensor) -> tuple:
        from_skip = _m.where(skip, _shift(alpha, 2), _m.add(_m.multiply(alpha, 0.0), _NEG))
        new = _m.add(_log_add3(alpha, _shift(alpha, 1), from_skip), steps.read(t))
        return _m.add(t, 1), new

    _, alpha = while_loop(lambda t, _: _m.less(t, time), body,
                          (_a.ones([], dtype=time.dtype), alpha))
    # The path ends in the last label or the blank after it: states 2L and 2L - 1.
    end = _a.expand_dims(2 * label_length, 1)
    last = _m.reduce_sum(_m.where(_m.equal(position, end), alpha, _m.multiply(alpha, 0.0)), 1)
    before = _m.where(_m.equal(position, end - 1), alpha, _m.add(_m.multiply(alpha, 0.0), _NEG))
    before = _m.reduce_max(before, axis=1)
    top = _m.maximum(last, before)
    total = _m.add(top, _m.log(_m.add(_m.exp(_m.subtract(last, top)),
                                      _m.exp(_m.subtract(before, top)))))
    return _m.negative(total)


class CTC(LossFunctionWrapper):
    """The CTC loss (see ``ctc``), reduced over the batch.

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.CTC()([[1]], tf.zeros([1, 2, 2]))), 4)
    0.2877
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "ctc"):
        super().__init__(ctc, reduction, name)
