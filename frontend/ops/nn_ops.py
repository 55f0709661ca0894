"""Neural-network ops (``stagecraft.nn``): activations, softmax and cross-entropies, dropout.

All but relu, sigmoid and softplus are composites of primitives, so their gradients come from
the primitives' rules."""
from __future__ import annotations

from typing import Any

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import random_ops as _r
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.eager.tensor import Tensor

sigmoid = _m.sigmoid
softplus = _m.softplus


def relu(features: Any, name: str | None = None) -> Tensor:
    """max(features, 0); its gradient at 0 is 0.

    >>> import stagecraft as tf
    >>> tf.nn.relu([-1., 2.]).numpy().tolist()
    [0.0, 2.0]
    """
    return bind(OPS["relu"], features)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """min(max(features, 0), 6)."""
    return _m.minimum(relu(features), 6)


def elu(features: Any, name: str | None = None) -> Tensor:
    """``x`` where ``x > 0``, else ``exp(x) - 1``.

    >>> import stagecraft as tf
    >>> [round(float(v), 4) for v in tf.nn.elu(tf.constant([-1.0, 2.0]))]
    [-0.6321, 2.0]
    """
    x = convert_to_tensor(features)
    # exp of min(x, 0): the unselected branch must stay finite, or its gradient is nan.
    negative = _m.subtract(_m.exp(_m.minimum(x, 0)), 1)
    return _m.where(_m.greater(x, 0), x, negative)


def _max_shifted(logits: Tensor, axis: int) -> Tensor:
    # Subtracting the (constant) max keeps exp from overflowing; it does not change the result.
    return _m.subtract(logits, _a.stop_gradient(_m.reduce_max(logits, axis, keepdims=True)))


def softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis``, computed stably.

    >>> import stagecraft as tf
    >>> [round(float(v), 4) for v in tf.nn.softmax([1., 1.])]
    [0.5, 0.5]
    """
    e = _m.exp(_max_shifted(convert_to_tensor(logits), axis))
    return _m.truediv(e, _m.reduce_sum(e, axis, keepdims=True))


def log_softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis``, computed stably."""
    z = _max_shifted(convert_to_tensor(logits), axis)
    return _m.subtract(z, _m.log(_m.reduce_sum(_m.exp(z), axis, keepdims=True)))


def softmax_cross_entropy_with_logits(labels: Any, logits: Any, axis: int = -1,
                                      name: str | None = None) -> Tensor:
    """Per-example cross-entropy between ``labels`` (a distribution) and softmax(logits).

    >>> import stagecraft as tf
    >>> round(float(tf.nn.softmax_cross_entropy_with_logits([[0., 1.]], [[0., 0.]])[0]), 4)
    0.6931
    """
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, logits.dtype) if not isinstance(labels, Tensor) else labels
    return _m.negative(_m.reduce_sum(_m.multiply(labels, log_softmax(logits, axis)), axis))


def sparse_softmax_cross_entropy_with_logits(labels: Any, logits: Any,
                                             name: str | None = None) -> Tensor:
    """Cross-entropy with integer class ``labels`` (one per example) over the last axis."""
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    if not labels.dtype.is_integer:
        raise TypeError(f"sparse_softmax_cross_entropy_with_logits: labels must be int32 or "
                        f"int64, got {labels.dtype.name}.")
    n = logits.shape[-1]
    if labels.shape.rank is not None and logits.shape.rank is not None and \
            labels.shape.rank != logits.shape.rank - 1:
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels must have rank "
                         f"{logits.shape.rank - 1} (logits rank minus 1), got shape "
                         f"{labels.shape}.")
    if type(labels) is Tensor and n is not None:
        bad = (labels.numpy() < 0) | (labels.numpy() >= n)
        if bad.any():
            raise InvalidArgumentError(
                f"sparse_softmax_cross_entropy_with_logits: Received a label value of "
                f"{int(labels.numpy()[bad].flat[0])} which is outside the valid range of "
                f"[0, {n}).")
    hot = _a.one_hot(labels, n, dtype=logits.dtype)
    return _m.negative(_m.reduce_sum(_m.multiply(hot, log_softmax(logits)), -1))


def dropout(x: Any, rate: float, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None) -> Tensor:
    """Zeros each element with probability ``rate`` and scales the rest by 1 / (1 - rate)."""
    x = convert_to_tensor(x)
    rate = float(rate)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}.")
    if rate == 0:
        return x
    shape = x.shape.as_list() if noise_shape is None else noise_shape
    keep = _m.greater_equal(_r.uniform(shape, dtype=x.dtype, seed=seed), rate)
    return _m.where(keep, _m.truediv(x, 1 - rate), _a.zeros_like(x))


__all__ = ["relu", "relu6", "elu", "sigmoid", "softplus", "softmax", "log_softmax",
           "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
           "dropout"]
