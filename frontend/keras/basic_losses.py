"""The basic Keras losses (mean squared and absolute errors, Huber, binary and (sparse)
categorical cross-entropy), the ``Loss`` base class, ``LossFunctionWrapper`` and the
reductions; ``keras.losses`` re-exports them with the others.

The functions (``mean_squared_error``, ...) return one loss per example; the classes
(``MeanSquaredError()``, ...) are callables ``loss(y_true, y_pred, sample_weight=None)`` that
weight and reduce them, by default to the mean over all per-example losses (Keras's
``SUM_OVER_BATCH_SIZE``). Probabilities (``from_logits=False``) are clipped to
``[1e-7, 1 - 1e-7]`` before the log, exactly as Keras does, so values equal TensorFlow's.
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.eager.tensor import Tensor

EPSILON = 1e-7  # keras.backend.epsilon()


def _prepare(y_true: Any, y_pred: Any) -> tuple[Tensor, Tensor]:
    y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
    y_true = _m.cast(y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true),
                     y_pred.dtype)
    return y_true, y_pred


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(square(y_true - y_pred), axis=-1)``: one loss per example.

    >>> import stagecraft as tf
    >>> tf.keras.losses.mean_squared_error([[0., 1.]], [[1., 1.]]).numpy().tolist()
    [0.5]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return _m.reduce_mean(_m.square(_m.subtract(y_pred, y_true)), axis=-1)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Cross-entropy between one-hot (or soft) labels and predictions, per example.

    With ``from_logits=False``, ``y_pred`` holds probabilities: they are rescaled to sum to 1
    along ``axis`` and clipped to ``[1e-7, 1 - 1e-7]``. ``label_smoothing`` mixes the labels
    with the uniform distribution.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.categorical_crossentropy([[0., 1.]], [[0.5, 0.5]])
    >>> [round(x, 4) for x in loss.numpy().tolist()]
    [0.6931]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _smooth_categorical(y_true, y_pred, label_smoothing, axis,
                                 "categorical_crossentropy")
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(y_true, y_pred, axis=axis)
    probs = _clipped_probabilities(y_pred, axis)
    return _m.negative(_m.reduce_sum(_m.multiply(y_true, _m.log(probs)), axis))


def _smooth_categorical(y_true: Tensor, y_pred: Tensor, label_smoothing: float, axis: int,
                        where: str) -> Tensor:
    """Labels mixed with the uniform distribution over the classes (Keras's smoothing)."""
    if not label_smoothing:
        return y_true
    n = y_pred.shape[axis]
    if n is None:
        raise ValueError(f"{where}: label_smoothing needs a known number of classes (the size "
                         f"of y_pred along axis).")
    return _m.add(_m.multiply(y_true, 1.0 - label_smoothing), label_smoothing / n)


def _clipped_probabilities(y_pred: Tensor, axis: int) -> Tensor:
    """Predictions rescaled to sum to 1 along ``axis`` and clipped to [1e-7, 1 - 1e-7]."""
    probs = _m.truediv(y_pred, _m.reduce_sum(y_pred, axis, keepdims=True))
    return _m.clip_by_value(probs, EPSILON, 1.0 - EPSILON)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1, ignore_class: int | None = None) -> Tensor:
    """Cross-entropy between integer class labels and predictions over the last axis, per
    example. Labels of shape ``(batch,)`` or ``(batch, 1)``, any numeric dtype (cast to
    int64). With ``from_logits=False``, ``y_pred`` holds probabilities, clipped to
    ``[1e-7, 1 - 1e-7]``. Examples labelled ``ignore_class`` (e.g. -1 for padding) get a
    loss of 0 (the class ``SparseCategoricalCrossentropy`` also leaves them out of its mean).

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.sparse_categorical_crossentropy([1], [[0.5, 0.5]])
    >>> [round(x, 4) for x in loss.numpy().tolist()]
    [0.6931]
    >>> loss = tf.keras.losses.sparse_categorical_crossentropy([-1, 0], [[0.5, 0.5]] * 2,
    ...                                                       ignore_class=-1)
    >>> [round(x, 4) for x in loss.numpy().tolist()]
    [0.0, 0.6931]
    """
    y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
    y_true = y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true)
    rank = y_pred.shape.rank
    if axis not in (-1, None) and not (rank is not None and axis == rank - 1):
        raise ValueError(f"sparse_categorical_crossentropy: only axis=-1 (classes last) is "
                         f"supported, got axis={axis}. Transpose y_pred so classes are last.")
    labels = _m.cast(y_true, _dt.int64)
    if rank is not None and labels.shape.rank == rank and labels.shape[-1] == 1:
        labels = _a.squeeze(labels, [-1])  # (batch, 1) labels, as Keras accepts
    valid = None
    if ignore_class is not None:
        valid = _m.not_equal(labels, int(ignore_class))
        labels = _m.where(valid, labels, _m.multiply(labels, 0))  # a label in range
    if not from_logits:
        y_pred = _m.log(_m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    losses = _nn.sparse_softmax_cross_entropy_with_logits(labels, y_pred)
    if valid is not None:
        losses = _m.where(valid, losses, _m.multiply(losses, 0.0))
    return losses


# Keras's short aliases.
mse = MSE = mean_squared_error


class Reduction:
    """How a loss object reduces the weighted per-example losses.

    >>> import stagecraft as tf
    >>> tf.keras.losses.Reduction.all()
    ('auto', 'none', 'sum', 'sum_over_batch_size')
    """

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key: {key!r}. Expected keys are "
                             f"{cls.all()}.")


def _weighted(losses: Tensor, sample_weight: Any) -> tuple[Tensor, Tensor]:
    """``losses * sample_weight`` (adjusting a weight of rank +-1 as Keras does), and the
    weight broadcast to the losses' shape."""
    w = _m.cast(sample_weight if isinstance(sample_weight, Tensor)
                else convert_to_tensor(sample_weight), losses.dtype)
    lr, wr = losses.shape.rank, w.shape.rank
    if lr is not None and wr is not None:
        if wr == lr + 1 and w.shape[-1] == 1:
            w = _a.squeeze(w, [-1])
        elif wr == lr - 1 and wr > 0:
            w = _a.expand_dims(w, -1)
    weighted = _m.multiply(losses, w)
    return weighted, _m.multiply(w, _m.add(_m.multiply(losses, 0.0), 1.0))


#: Keras 3's reduction that divides by the total sample weight, not the number of losses.
MEAN_WITH_SAMPLE_WEIGHT = "mean_with_sample_weight"
_KERAS3_REDUCTIONS = (MEAN_WITH_SAMPLE_WEIGHT,)


def _reduce(losses: Tensor, reduction: str, weights: Tensor | None = None) -> Tensor:
    if reduction == Reduction.NONE:
        return losses
    total = _m.reduce_sum(losses)
    if reduction == Reduction.SUM:
        return total
    if reduction == MEAN_WITH_SAMPLE_WEIGHT and weights is not None:
        count = _m.reduce_sum(weights)
    else:
        count = _m.cast(_a.size(losses), losses.dtype)
    # Keras's divide_no_nan: an empty batch gives 0, not nan.
    return _m.where(_m.equal(count, 0.0), _m.multiply(total, 0.0),
                    _m.truediv(total, _m.maximum(count, 1.0)))


def reduce_masked(losses: Tensor, mask: Tensor, reduction: str, sample_weight: Any) -> Tensor:
    """Keras's reduction of losses under a mask (True keeps): masked entries add nothing,
    and the mean is over the kept ones (Keras scales them by total / kept)."""
    mask = _m.cast(mask, losses.dtype)
    if reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE):
        total = _m.cast(_a.size(mask), losses.dtype)
        mask = _m.multiply(mask, _m.truediv(total, _m.add(_m.reduce_sum(mask), EPSILON)))
    weight = mask if sample_weight is None else _m.multiply(
        mask, _weighted(_m.add(_m.multiply(losses, 0.0), 1.0), sample_weight)[0])
    losses, weights = _weighted(losses, weight)
    return _reduce(losses, reduction, weights)


class Loss:
    """Base class of loss objects: ``call(y_true, y_pred)`` returns per-example losses,
    ``__call__`` weights them by ``sample_weight`` and reduces them (``reduction``).

    >>> import stagecraft as tf
    >>> class Absolute(tf.keras.losses.Loss):
    ...     def call(self, y_true, y_pred):
    ...         return tf.reduce_mean(tf.abs(y_pred - y_true), axis=-1)
    >>> float(Absolute()([[0.], [0.]], [[1.], [3.]]))
    2.0
    """

    def __init__(self, reduction: str | None = Reduction.AUTO, name: str | None = None):
        if reduction is None:  # Keras 3 spells 'none' as None
            reduction = Reduction.NONE
        if reduction not in _KERAS3_REDUCTIONS:
            Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The weighted, reduced loss of a batch."""
        y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
        y_true = y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true)
        losses = self.call(y_true, y_pred)
        weights = None
        if sample_weight is not None:
            losses, weights = _weighted(losses, sample_weight)
        return _reduce(losses, self.reduction, weights)

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred) "
                                  f"returning the per-example losses.")

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        """A new loss object from ``get_config``'s output."""
        return cls(**config)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(abs(y_true - y_pred), axis=-1)``: one loss per example.

    >>> import stagecraft as tf
    >>> tf.keras.losses.mean_absolute_error([[0., 2.]], [[1., 1.]]).numpy().tolist()
    [1.0]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return _m.reduce_mean(_m.abs(_m.subtract(y_pred, y_true)), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Tensor:
    """Huber loss averaged over the last axis: ``0.5 * e^2`` where ``|e| <= delta``, else
    ``delta * (|e| - 0.5 * delta)``.

    >>> import stagecraft as tf
    >>> tf.keras.losses.huber([[0.0, 0.0]], [[0.5, 3.0]]).numpy().tolist()
    [1.3125]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    error = _m.abs(_m.subtract(y_pred, y_true))
    quadratic = _m.multiply(0.5, _m.square(error))
    linear = _m.multiply(delta, _m.subtract(error, 0.5 * delta))
    return _m.reduce_mean(_m.where(_m.less_equal(error, delta), quadratic, linear), axis=-1)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Binary cross-entropy averaged over ``axis``, per example. Probabilities
    (``from_logits=False``) are clipped to ``[1e-7, 1 - 1e-7]`` and ``1e-7`` is added inside
    the logs, as Keras's backend does; logits use the stable
    ``max(x, 0) - x * z + log(1 + exp(-|x|))``.

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.binary_crossentropy([[1.0]], [[0.0]], from_logits=True)[0]), 4)
    0.6931
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = _m.add(_m.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    return _m.reduce_mean(_binary_terms(y_true, y_pred, from_logits), axis=axis)


def _binary_terms(y_true: Tensor, y_pred: Tensor, from_logits: bool) -> Tensor:
    """Elementwise binary cross-entropy (Keras's backend ``binary_crossentropy``)."""
    if from_logits:
        return _m.add(_m.subtract(_m.maximum(y_pred, 0.0), _m.multiply(y_pred, y_true)),
                      _m.log(_m.add(1.0, _m.exp(_m.negative(_m.abs(y_pred))))))
    p = _m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    return _m.negative(_m.add(
        _m.multiply(y_true, _m.log(_m.add(p, EPSILON))),
        _m.multiply(_m.subtract(1.0, y_true), _m.log(_m.add(_m.subtract(1.0, p), EPSILON)))))


class LossFunctionWrapper(Loss):
    """A loss object around a per-example loss function ``fn(y_true, y_pred, **kwargs)``.

    >>> import stagecraft as tf
    >>> mse = tf.keras.losses.LossFunctionWrapper(tf.keras.losses.mean_squared_error)
    >>> float(mse([[0.], [0.]], [[1.], [3.]]))
    5.0
    """

    def __init__(self, fn: Callable[..., Tensor], reduction: str | None = Reduction.AUTO,
                 name: str | None = None, **kwargs: Any):
        super().__init__(reduction, name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


class MeanSquaredError(LossFunctionWrapper):
    """Mean of ``square(y_true - y_pred)`` (over the last axis, then the batch).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.MeanSquaredError()([[0., 1.], [0., 0.]], [[1., 1.], [1., 0.]]))
    0.5
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_squared_error"):
        super().__init__(mean_squared_error, reduction, name)


class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of ``abs(y_true - y_pred)`` (over the last axis, then the batch).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.MeanAbsoluteError()([[0., 2.]], [[1., 1.]]))
    1.0
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction, name)


class Huber(LossFunctionWrapper):
    """The Huber loss (see ``huber``), quadratic within ``delta`` and linear beyond.

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.Huber()([[0.0, 0.0]], [[0.5, 3.0]]))
    1.3125
    """

    def __init__(self, delta: float = 1.0, reduction: str = Reduction.AUTO,
                 name: str = "huber_loss"):
        super().__init__(huber, reduction, name, delta=delta)


class BinaryCrossentropy(LossFunctionWrapper):
    """Binary cross-entropy (see ``binary_crossentropy``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.BinaryCrossentropy()([[1.0], [0.0]], [[0.9], [0.2]])), 4)
    0.1643
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy with one-hot labels (see ``categorical_crossentropy``).

    >>> import stagecraft as tf
    >>> cce = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
    >>> round(float(cce([[0., 1.]], [[0., 0.]])), 4)
    0.6931
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy with integer labels (see ``sparse_categorical_crossentropy``). Labels
    equal to ``ignore_class`` are masked out: they add nothing, and the mean is over the
    other examples only (Keras's masked reduction).

    >>> import stagecraft as tf
    >>> scce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> round(float(scce([0, 1], [[0., 0.], [0., 0.]])), 4)
    0.6931
    >>> masked = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    >>> round(float(masked([0, -1], [[0., 0.], [0., 0.]])), 4)
    0.6931
    """

    def __init__(self, from_logits: bool = False, ignore_class: int | None = None,
                 reduction: str | None = Reduction.AUTO,
                 name: str = "sparse_categorical_crossentropy", axis: int = -1):
        super().__init__(sparse_categorical_crossentropy, reduction, name,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)
        self.ignore_class = ignore_class

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        if self.ignore_class is None:
            return super().__call__(y_true, y_pred, sample_weight)
        y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
        y_true = y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true)
        losses = self.call(y_true, y_pred)
        labels = _a.reshape(_m.cast(y_true, _dt.int64), _a.shape(losses))
        return reduce_masked(losses, _m.not_equal(labels, int(self.ignore_class)),
                             self.reduction, sample_weight)


MAE = mae = mean_absolute_error

__all__ = ["BinaryCrossentropy", "CategoricalCrossentropy", "EPSILON", "Huber", "Loss",
           "LossFunctionWrapper", "MAE", "MSE", "MeanAbsoluteError", "MeanSquaredError",
           "Reduction", "SparseCategoricalCrossentropy", "binary_crossentropy",
           "categorical_crossentropy", "huber", "mae", "mean_absolute_error",
           "mean_squared_error", "mse", "sparse_categorical_crossentropy"]
