"""``keras.metrics``: running averages for training loops (``Mean`` and accuracies).

A metric is a layer whose state is non-trainable variables (``total``, ``count``) created in
its constructor, so ``update_state`` works eagerly and inside ``@tf.function`` (it only
assigns), and checkpoints save the state under those names.

>>> import stagecraft as tf
>>> train_loss = tf.keras.metrics.Mean(name="train_loss")
>>> train_loss.update_state(1.0); train_loss.update_state([2.0, 3.0])
>>> float(train_loss.result())
2.0
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.base_layer import Layer
from stagecraft.eager.tensor import Tensor


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


class Metric(Layer):
    """Base class: ``update_state(...)`` accumulates, ``result()`` reads, ``reset_state()``
    zeroes; calling the metric updates it and returns the new result.

    >>> import stagecraft as tf
    >>> class Maximum(tf.keras.metrics.Metric):
    ...     def __init__(self, name="maximum"):
    ...         super().__init__(name=name)
    ...         self.best = self.add_weight("best", initializer="zeros")
    ...     def update_state(self, values):
    ...         self.best.assign(tf.maximum(self.best, tf.reduce_max(values)))
    ...     def result(self):
    ...         return tf.identity(self.best)
    >>> m = Maximum(); float(m([1.0, 3.0])), float(m([2.0]))
    (3.0, 3.0)
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.built = True  # the state is made in the constructor, not on a first call

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        """``update_state(*args, **kwargs)``, then ``result()``."""
        self._check_initialized()
        self.update_state(*args, **kwargs)
        return self.result()

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define update_state(...).")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define result().")

    def reset_state(self) -> None:
        """Sets every state variable back to zero.

        >>> import stagecraft as tf
        >>> m = tf.keras.metrics.Mean(); _ = m([4.0]); m.reset_state(); float(m.result())
        0.0
        """
        for v in self.variables:
            v.assign(_a.zeros(v.shape.as_list(), v.dtype))

    reset_states = reset_state  # the TF 2.0-2.4 spelling

    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = "zeros", *, trainable: bool | None = False) -> Any:
        """A state variable: like ``Layer.add_weight`` but zero-initialized and
        non-trainable by default."""
        return super().add_weight(name, shape, dtype, initializer,
                                  trainable=False if trainable is None else trainable)


class Mean(Metric):
    """The (weighted) mean of every value passed to ``update_state``.

    >>> import stagecraft as tf
    >>> m = tf.keras.metrics.Mean()
    >>> float(m([1.0, 3.0], sample_weight=[1.0, 3.0]))
    2.5
    """

    def __init__(self, name: str = "mean", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        """Adds ``values`` (any shape; weighted by a broadcastable ``sample_weight``)."""
        values = _m.cast(_tensor(values), self._dtype)
        if sample_weight is None:
            self.total.assign_add(_m.reduce_sum(values))
            self.count.assign_add(_m.cast(_a.size(values), self._dtype))
            return
        w = _m.cast(_tensor(sample_weight), self._dtype)
        if w.shape.rank is not None and values.shape.rank is not None and \
                w.shape.rank == values.shape.rank + 1 and w.shape[-1] == 1:
            w = _a.squeeze(w, [-1])
        w = _m.multiply(w, _a.ones_like(values))  # broadcast to the values' shape
        self.total.assign_add(_m.reduce_sum(_m.multiply(values, w)))
        self.count.assign_add(_m.reduce_sum(w))

    def result(self) -> Tensor:
        """``total / count`` (0 before any update)."""
        count = self.count.read_value()
        return _m.where(_m.equal(count, 0.0), _m.multiply(count, 0.0),
                        _m.truediv(self.total.read_value(), _m.maximum(count, 1e-30)))


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred)`` over every example seen.

    >>> import stagecraft as tf
    >>> mae = tf.keras.metrics.MeanMetricWrapper(lambda t, p: tf.abs(t - p), name="mae")
    >>> float(mae([1.0, 2.0], [2.0, 4.0]))
    1.5
    """

    def __init__(self, fn: Callable[..., Tensor], name: str | None = None, dtype: Any = None,
                 **kwargs: Any):
        super().__init__(name=name or "mean_metric_wrapper", dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Adds ``fn(y_true, y_pred)`` per example (both cast to the metric's dtype first,
        as Keras does)."""
        y_true = _m.cast(_tensor(y_true), self._dtype)
        y_pred = _m.cast(_tensor(y_pred), self._dtype)
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where the integer label equals ``argmax(y_pred, -1)``, else 0.0 (per example).

    >>> import stagecraft as tf
    >>> tf.keras.metrics.sparse_categorical_accuracy([1, 0], [[0.2, 0.8], [0.3, 0.7]]).numpy()
    array([1., 0.], dtype=float32)
    """
    y_pred, y_true = _tensor(y_pred), _tensor(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and \
            y_true.shape.rank == y_pred.shape.rank and y_true.shape[-1] == 1:
        y_true = _a.squeeze(y_true, [-1])
    predicted = _m.argmax(y_pred, axis=-1)
    return _m.cast(_m.equal(_m.cast(y_true, _dt.float32), _m.cast(predicted, _dt.float32)),
                   _dt.float32)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where ``argmax(y_true, -1) == argmax(y_pred, -1)``, else 0.0 (per example).

    >>> import stagecraft as tf
    >>> tf.keras.metrics.categorical_accuracy([[0., 1.]], [[0.2, 0.8]]).numpy()
    array([1.], dtype=float32)
    """
    return _m.cast(_m.equal(_m.argmax(_tensor(y_true), axis=-1),
                            _m.argmax(_tensor(y_pred), axis=-1)), _dt.float32)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label equals the arg-max prediction.

    >>> import stagecraft as tf
    >>> acc = tf.keras.metrics.SparseCategoricalAccuracy()
    >>> float(acc([2, 1], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.0]]))
    0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the arg-max of one-hot labels equals the arg-max prediction.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.CategoricalAccuracy()([[0., 1.]], [[0.3, 0.7]]))
    1.0
    """

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Tensor:
    """The mean over the last axis of 1.0 where ``(y_pred > threshold) == y_true``.

    >>> import stagecraft as tf
    >>> tf.keras.metrics.binary_accuracy([[1.0], [0.0]], [[0.7], [0.6]]).numpy().tolist()
    [1.0, 0.0]
    """
    y_pred = _tensor(y_pred)
    y_true = _m.cast(_tensor(y_true), y_pred.dtype)
    predicted = _m.cast(_m.greater(y_pred, threshold), y_pred.dtype)
    return _m.reduce_mean(_m.cast(_m.equal(y_true, predicted), _dt.float32), axis=-1)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the binary label.

    >>> import stagecraft as tf
    >>> float(tf.keras.metrics.BinaryAccuracy()([[1.0], [0.0]], [[0.7], [0.6]]))
    0.5
    """

    def __init__(self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)


__all__ = ["BinaryAccuracy", "CategoricalAccuracy", "Mean", "MeanMetricWrapper", "Metric",
           "SparseCategoricalAccuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy"]
