"""``keras.activations``: element-wise activation functions, looked up by name with ``get``.

Each function is built from stagecraft ops, so it is differentiable on a tape and stages under
``@function`` like any other op.
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None,
         threshold: float = 0.0) -> Tensor:
    """Rectified linear unit: ``x`` where ``x > threshold``, ``alpha * (x - threshold)`` below;
    capped at ``max_value`` when given (TensorFlow Keras's ``relu``).

    >>> import stagecraft as tf
    >>> tf.keras.activations.relu([-2., 1., 8.]).numpy().tolist()
    [0.0, 1.0, 8.0]
    >>> tf.keras.activations.relu([-2., 1., 8.], alpha=0.5, max_value=6.).numpy().tolist()
    [-1.0, 1.0, 6.0]
    """
    x = convert_to_tensor(x)
    if alpha == 0 and threshold == 0:
        y = _nn.relu(x)  # the primitive: cheaper and its gradient at 0 is TensorFlow's (0)
    else:
        above = _m.greater(x, threshold)
        y = _m.where(above, x, _m.multiply(_m.subtract(x, threshold), alpha))
    if max_value is not None:
        y = _m.minimum(y, max_value)
    return y


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent.

    >>> import stagecraft as tf
    >>> tf.keras.activations.tanh([0.]).numpy().tolist()
    [0.0]
    """
    return _m.tanh(x)


def sigmoid(x: Any) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-x))``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.sigmoid([0.]).numpy().tolist()
    [0.5]
    """
    return _m.sigmoid(x)


def softplus(x: Any) -> Tensor:
    """``log(exp(x) + 1)``, computed stably.

    >>> import stagecraft as tf
    >>> round(float(tf.keras.activations.softplus([0.])[0]), 4)
    0.6931
    """
    return _m.softplus(x)


def softmax(x: Any, axis: int = -1) -> Tensor:
    """Softmax along ``axis``. Like Keras, a rank-0 or rank-1 input is an error (Keras expects a
    batch dimension; use ``tf.nn.softmax`` for a single vector).

    >>> import stagecraft as tf
    >>> tf.keras.activations.softmax([[1., 1.]]).numpy().tolist()
    [[0.5, 0.5]]
    """
    x = convert_to_tensor(x)
    if x.shape.rank is not None and x.shape.rank <= 1:
        raise ValueError(f"keras.activations.softmax: cannot apply softmax to a tensor of rank "
                         f"{x.shape.rank} (shape {x.shape}); it expects a batch of vectors. "
                         f"Add a batch dimension (x[None, :]) or use tf.nn.softmax.")
    return _nn.softmax(x, axis=axis)


def linear(x: Any) -> Any:
    """The identity (what ``activation=None`` means).

    >>> import stagecraft as tf
    >>> tf.keras.activations.linear(tf.constant([-1.])).numpy().tolist()
    [-1.0]
    """
    return x


_BY_NAME: dict[str, Callable[..., Any]] = {
    "relu": relu, "tanh": tanh, "sigmoid": sigmoid, "softmax": softmax, "linear": linear,
    "softplus": softplus,
}


def get(identifier: str | Callable[..., Any] | None) -> Callable[..., Any]:
    """The activation function for ``identifier``: a name (``'relu'``), a callable (returned
    as is) or None (``linear``).

    >>> import stagecraft as tf
    >>> tf.keras.activations.get('tanh') is tf.keras.activations.tanh
    True
    >>> tf.keras.activations.get(None) is tf.keras.activations.linear
    True
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation function: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))}; or pass a "
                             f"callable (e.g. activation=tf.nn.relu6).")
        return fn
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r} (of "
                    f"type {type(identifier).__name__}). Pass a name such as 'relu', a "
                    f"callable, or None.")


def serialize(activation: Callable[..., Any]) -> str:
    """The name of a built-in activation (the inverse of ``get`` for names).

    >>> import stagecraft as tf
    >>> tf.keras.activations.serialize(tf.keras.activations.relu)
    'relu'
    """
    for name, fn in _BY_NAME.items():
        if fn is activation:
            return name
    raise ValueError(f"keras.activations.serialize: {activation!r} is not a built-in "
                     f"activation; only {', '.join(sorted(_BY_NAME))} have names.")


__all__ = ["get", "linear", "relu", "serialize", "sigmoid", "softmax", "softplus", "tanh"]
