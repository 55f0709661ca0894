"""``keras.metrics``: the metric base classes, accuracies, regression errors, top-k accuracy
and the confusion-matrix metrics, and ``get``."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import losses
from stagecraft.keras.metric_base import (BinaryAccuracy, CategoricalAccuracy, Mean,
                                          MeanMetricWrapper, Metric, SparseCategoricalAccuracy,
                                          binary_accuracy, categorical_accuracy,
                                          sparse_categorical_accuracy)
from stagecraft.keras.more_metrics import (AUC, MeanAbsoluteError, MeanSquaredError, Precision,
                                           Recall, RootMeanSquaredError,
                                           SparseTopKCategoricalAccuracy,
                                           TopKCategoricalAccuracy,
                                           sparse_top_k_categorical_accuracy,
                                           top_k_categorical_accuracy)


def _more_names() -> dict:
    return {"precision": Precision, "Precision": Precision, "recall": Recall,
            "Recall": Recall, "auc": AUC, "AUC": AUC,
            "top_k_categorical_accuracy": TopKCategoricalAccuracy,
            "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
            "RootMeanSquaredError": RootMeanSquaredError,
            "MeanSquaredError": MeanSquaredError,
            "MeanAbsoluteError": MeanAbsoluteError}


def _wrapper(fn: Callable[..., Tensor], name: str) -> Callable[[], Metric]:
    return lambda: MeanMetricWrapper(fn, name=name)


def get(identifier: Any) -> Metric:
    """A metric object for ``identifier``: a metric, a metric class or function name
    (``"sparse_categorical_accuracy"``, ``"mse"``), or a function ``fn(y_true, y_pred)``
    (averaged over examples). ``"accuracy"`` depends on the targets' shape and is resolved by
    ``Model.compile``.

    >>> import stagecraft as tf
    >>> tf.keras.metrics.get("mae").name
    'mae'
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        named = {
            "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "SparseCategoricalAccuracy": SparseCategoricalAccuracy,
            "categorical_accuracy": CategoricalAccuracy,
            "CategoricalAccuracy": CategoricalAccuracy,
            "binary_accuracy": BinaryAccuracy, "BinaryAccuracy": BinaryAccuracy,
            "mse": _wrapper(losses.mean_squared_error, "mse"),
            "mean_squared_error": _wrapper(losses.mean_squared_error, "mean_squared_error"),
            "mae": _wrapper(losses.mean_absolute_error, "mae"),
            "mean_absolute_error": _wrapper(losses.mean_absolute_error, "mean_absolute_error"),
            "Mean": Mean,
            **_more_names(),
        }
        found = named.get(identifier)
        if found is None:
            raise ValueError(f"Unknown metric: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(named))} and 'accuracy'.")
        return found()
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(identifier, name=getattr(identifier, "__name__", None))
    raise TypeError(f"Could not interpret metric identifier: {identifier!r}.")


__all__ = ["AUC", "BinaryAccuracy", "CategoricalAccuracy", "Mean", "MeanAbsoluteError",
           "MeanMetricWrapper", "MeanSquaredError", "Metric", "Precision", "Recall",
           "RootMeanSquaredError", "SparseCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "TopKCategoricalAccuracy", "binary_accuracy", "categorical_accuracy", "get",
           "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy",
           "top_k_categorical_accuracy"]
