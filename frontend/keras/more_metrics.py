"""Keras metrics beyond means of per-example values: regression errors, top-k accuracy, and
the confusion-matrix metrics (``Precision``, ``Recall``, ``AUC``), with Keras's formulas
(thresholded at 0.5 unless told otherwise; a zero denominator gives 0, as
``tf.math.divide_no_nan``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import losses
from stagecraft.keras.metric_base import Mean, MeanMetricWrapper, Metric, _tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["MeanSquaredError", "MeanAbsoluteError", "RootMeanSquaredError",
           "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall",
           "AUC", "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"]


def _divide_no_nan(a: Tensor, b: Tensor) -> Tensor:
    return _m.where(_m.equal(b, 0.0), _m.multiply(b, 0.0), _m.truediv(a, _m.maximum(b, 1e-30)))


class MeanSquaredError(MeanMetricWrapper):
    """The mean of ``square(y_true - y_pred)``.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.MeanSquaredError()([[0.0, 1.0]], [[1.0, 1.0]]))
    0.5
    """

    def __init__(self, name: str = "mean_squared_error", dtype: Any = None):
        super().__init__(losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of ``abs(y_true - y_pred)``."""

    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None):
        super().__init__(losses.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the mean squared error over every element seen.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.RootMeanSquaredError()([[0.0, 0.0]], [[3.0, 4.0]]))
    3.535533905029297
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_true = _m.cast(_tensor(y_true), self._dtype)
        y_pred = _m.cast(_tensor(y_pred), self._dtype)
        super().update_state(_m.square(_m.subtract(y_pred, y_true)), sample_weight)

    def result(self) -> Tensor:
        return _m.sqrt(super().result())


def _in_top_k(target: Tensor, y_pred: Tensor, k: int) -> Tensor:
    """1.0 where the target class's score has fewer than ``k`` scores strictly above it."""
    depth = y_pred.shape[-1]
    score = _m.reduce_sum(_m.multiply(y_pred, _a.one_hot(target, depth, dtype=y_pred.dtype)),
                          axis=-1, keepdims=True)
    above = _m.reduce_sum(_m.cast(_m.greater(y_pred, score), _dt.float32), axis=-1)
    return _m.cast(_m.less(above, float(k)), _dt.float32)


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Tensor:
    """1.0 where the one-hot label's class is among the ``k`` highest predictions."""
    return _in_top_k(_m.argmax(_tensor(y_true), axis=-1), _tensor(y_pred), k)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Tensor:
    """1.0 where the integer label is among the ``k`` highest predictions.

    >>> import stagecraft as tf
    >>> tf.keras.metrics.sparse_top_k_categorical_accuracy(
    ...     [2, 0], [[0.1, 0.5, 0.4], [0.1, 0.5, 0.4]], k=2).numpy().tolist()
    [1.0, 0.0]
    """
    y_true = _tensor(y_true)
    if y_true.shape.rank == 2 and y_true.shape[-1] == 1:
        y_true = _a.squeeze(y_true, [-1])
    return _in_top_k(_m.cast(y_true, _dt.int64), _tensor(y_pred), k)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy",
                 dtype: Any = None):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


class _Confusion(Metric):
    """Confusion counts (true/false positives/negatives) per threshold, weighted."""

    def __init__(self, thresholds: list[float], name: str, dtype: Any):
        super().__init__(name=name, dtype=dtype)
        self.thresholds = [float(t) for t in thresholds]
        n = [len(self.thresholds)]
        self.true_positives = self.add_weight("true_positives", n)
        self.false_positives = self.add_weight("false_positives", n)
        self.true_negatives = self.add_weight("true_negatives", n)
        self.false_negatives = self.add_weight("false_negatives", n)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = _m.cast(_tensor(y_pred), self._dtype)
        weight = _a.ones_like(y_pred) if sample_weight is None else _m.multiply(
            _m.cast(_tensor(sample_weight), self._dtype), _a.ones_like(y_pred))
        weight = _a.reshape(weight, [-1, 1])
        y_true = _a.reshape(_m.cast(_tensor(y_true), self._dtype), [-1, 1])
        y_pred = _a.reshape(y_pred, [-1, 1])
        thresholds = _a.reshape(_tensor(np.asarray(self.thresholds, self._dtype.np)), [1, -1])
        predicted = _m.cast(_m.greater(y_pred, thresholds), self._dtype)  # (n, thresholds)
        positive = _m.cast(_m.greater(y_true, 0.5), self._dtype)
        negative = _m.subtract(1.0, positive)

        def count(pred: Tensor, truth: Tensor) -> Tensor:
            return _m.reduce_sum(_m.multiply(_m.multiply(pred, truth), weight), axis=0)

        self.true_positives.assign_add(count(predicted, positive))
        self.false_positives.assign_add(count(predicted, negative))
        self.true_negatives.assign_add(count(_m.subtract(1.0, predicted), negative))
        self.false_negatives.assign_add(count(_m.subtract(1.0, predicted), positive))


class Precision(_Confusion):
    """``true positives / (true positives + false positives)`` of ``y_pred > threshold``.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.Precision()([0, 1, 1, 1], [1.0, 1.0, 0.0, 1.0]))
    0.6666666865348816
    """

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str = "precision", dtype: Any = None):
        if top_k is not None or class_id is not None:
            raise ValueError("Precision: top_k and class_id are not supported.")
        super().__init__([0.5 if thresholds is None else thresholds], name, dtype)

    def result(self) -> Tensor:
        tp = self.true_positives.read_value()[0]
        return _divide_no_nan(tp, _m.add(tp, self.false_positives.read_value()[0]))


class Recall(_Confusion):
    """``true positives / (true positives + false negatives)`` of ``y_pred > threshold``.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.Recall()([0, 1, 1, 1], [1.0, 0.0, 1.0, 1.0]))
    0.6666666865348816
    """

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str = "recall", dtype: Any = None):
        if top_k is not None or class_id is not None:
            raise ValueError("Recall: top_k and class_id are not supported.")
        super().__init__([0.5 if thresholds is None else thresholds], name, dtype)

    def result(self) -> Tensor:
        tp = self.true_positives.read_value()[0]
        return _divide_no_nan(tp, _m.add(tp, self.false_negatives.read_value()[0]))


class AUC(_Confusion):
    """The area under the ROC curve, by the trapezoidal rule over ``num_thresholds``
    thresholds spread over [0, 1] (Keras's: ``-epsilon``, ``(i)/(n-1)``, ``1 + epsilon``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.metrics.AUC()([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])), 3)
    0.75
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str = "auc",
                 dtype: Any = None, thresholds: Any = None, multi_label: bool = False):
        if curve != "ROC" or summation_method != "interpolation" or multi_label:
            raise ValueError("AUC: only curve='ROC' with summation_method='interpolation' "
                             "(the defaults) and multi_label=False are supported.")
        if num_thresholds < 2:
            raise ValueError(f"AUC: num_thresholds must be > 1; got {num_thresholds}.")
        eps = 1e-7
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([0.0 - eps, *inner, 1.0 + eps], name, dtype)
        self.num_thresholds = num_thresholds

    def result(self) -> Tensor:
        tp, fp = self.true_positives.read_value(), self.false_positives.read_value()
        fn, tn = self.false_negatives.read_value(), self.true_negatives.read_value()
        tpr = _divide_no_nan(tp, _m.add(tp, fn))
        fpr = _divide_no_nan(fp, _m.add(fp, tn))
        n = self.num_thresholds
        widths = _m.subtract(fpr[:n - 1], fpr[1:])
        heights = _m.multiply(_m.add(tpr[:n - 1], tpr[1:]), 0.5)
        return _m.reduce_sum(_m.multiply(widths, heights))
