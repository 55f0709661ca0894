"""``keras.losses``: Keras's loss functions (one loss per example) and ``Loss`` classes
(weighted and reduced, by default to the mean over the batch), looked up by name with
``get`` and turned into configs and back with ``serialize``/``deserialize``. They live in
``basic_losses`` (squared/absolute errors, Huber, cross-entropies, the base classes),
``more_losses`` (hinge, log-cosh, Poisson, KL, cosine, focal, Dice, ...) and ``ctc_loss``.

>>> import stagecraft as tf
>>> float(tf.keras.losses.get("MeanSquaredError")([[0.], [0.]], [[1.], [3.]]))
5.0
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.keras import more_losses as _more
from stagecraft.keras.basic_losses import (EPSILON, MAE, MSE, BinaryCrossentropy,
                                           CategoricalCrossentropy, Huber, Loss,
                                           LossFunctionWrapper, MeanAbsoluteError,
                                           MeanSquaredError, Reduction,
                                           SparseCategoricalCrossentropy, binary_crossentropy,
                                           categorical_crossentropy, huber, mae,
                                           mean_absolute_error, mean_squared_error, mse,
                                           sparse_categorical_crossentropy)
from stagecraft.keras.circle_loss import Circle, circle
from stagecraft.keras.ctc_loss import CTC, ctc
from stagecraft.keras.more_losses import (  # noqa: F401
    KLD, MAPE, MSLE, BinaryFocalCrossentropy, CategoricalFocalCrossentropy,
    CategoricalGeneralizedCrossEntropy, CategoricalHinge, CosineSimilarity, Dice, Hinge,
    KLDivergence, LogCosh, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Poisson,
    SquaredHinge, Tversky, binary_focal_crossentropy, categorical_focal_crossentropy,
    categorical_generalized_cross_entropy, categorical_hinge, cosine_similarity, dice, hinge,
    kl_divergence, kld, kullback_leibler_divergence, log_cosh, logcosh, mape,
    mean_absolute_percentage_error, mean_squared_logarithmic_error, msle, poisson,
    squared_hinge, tversky)

_BY_NAME: dict[str, Callable[..., Any]] = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "MSE": mean_squared_error, "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "MeanSquaredError": MeanSquaredError, "CategoricalCrossentropy": CategoricalCrossentropy,
    "SparseCategoricalCrossentropy": SparseCategoricalCrossentropy,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "MAE": mean_absolute_error, "MeanAbsoluteError": MeanAbsoluteError,
    "binary_crossentropy": binary_crossentropy, "BinaryCrossentropy": BinaryCrossentropy,
    "huber": huber, "huber_loss": huber, "Huber": Huber,
}


def get(identifier: str | dict | Callable[..., Any]) -> Callable[..., Any]:
    """The loss for ``identifier``: a function name (``'mse'``) gives the function, a class
    name (``'MeanSquaredError'``) a new object, a ``serialize`` dict the object it
    describes; callables are returned as is.

    >>> import stagecraft as tf
    >>> tf.keras.losses.get('mse') is tf.keras.losses.mean_squared_error
    True
    """
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        found = _BY_NAME.get(identifier)
        if found is None:
            raise ValueError(f"Unknown loss function: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))}.")
        return found() if isinstance(found, type) else found
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret loss identifier: {identifier!r} (of type "
                    f"{type(identifier).__name__}).")


def serialize(loss: Any) -> str | dict:
    """A loss object as ``{'class_name': ..., 'config': ...}``; a built-in loss function as
    its name.

    >>> import stagecraft as tf
    >>> tf.keras.losses.serialize(tf.keras.losses.Huber(delta=2.0))["config"]["delta"]
    2.0
    >>> tf.keras.losses.serialize(tf.keras.losses.mse)
    'mean_squared_error'
    """
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    name = getattr(loss, "__name__", None)
    if name is not None and _BY_NAME.get(name) is loss:
        return name
    raise ValueError(f"keras.losses.serialize: {loss!r} is neither a Loss object nor a "
                     f"built-in loss function. Subclass tf.keras.losses.Loss (with get_config) "
                     f"to make a custom loss serializable.")


def deserialize(name: str | dict, custom_objects: dict | None = None) -> Any:
    """The loss ``serialize`` described: a function for a name, a new object for a dict;
    ``custom_objects`` supplies user classes and functions by name.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.deserialize({"class_name": "Huber", "config": {"delta": 2.0}})
    >>> type(loss).__name__, loss.get_config()["delta"]
    ('Huber', 2.0)
    """
    custom = custom_objects or {}
    if isinstance(name, str):
        return custom[name] if name in custom else get(name)
    if not isinstance(name, dict) or not isinstance(name.get("config", {}), dict):
        raise ValueError(f"keras.losses.deserialize: expected a name or a dict with "
                         f"'class_name' and a 'config' dict; got {str(name)[:200]}.")
    class_name = name.get("class_name")
    cls = custom.get(class_name) or _BY_NAME.get(class_name)
    if not isinstance(cls, type):
        classes = sorted(n for n, v in _BY_NAME.items() if isinstance(v, type))
        raise ValueError(f"Unknown loss class {class_name!r}: known classes are "
                         f"{', '.join(classes)}. Pass custom losses as "
                         f"custom_objects={{'Name': Name}}.")
    return cls.from_config(dict(name.get("config", {})))


_BY_NAME.update({name: getattr(_more, name) for name in _more.__all__})
_BY_NAME.update({"CTC": CTC, "ctc": ctc, "Circle": Circle, "circle": circle})

__all__ = ["BinaryCrossentropy", "CTC", "CategoricalCrossentropy", "Circle", "EPSILON", "Huber",
           "Loss", "LossFunctionWrapper", "MAE", "MSE", "MeanAbsoluteError", "MeanSquaredError",
           "Reduction", "SparseCategoricalCrossentropy", "binary_crossentropy",
           "categorical_crossentropy", "circle", "ctc", "deserialize", "get", "huber", "mae",
           "mean_absolute_error", "mean_squared_error", "mse", "serialize",
           "sparse_categorical_crossentropy"] + list(_more.__all__)
