"""Neural-network ops (``stagecraft.nn``): activations, softmax and cross-entropies, dropout.

All but relu, sigmoid, softplus, softmax, log_softmax and the sparse cross-entropy (fused
primitives, as in TensorFlow) are composites of primitives, so their gradients come from the
primitives' rules."""
from __future__ import annotations

from typing import Any

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import random_ops as _r
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
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


def softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis``, computed stably (one primitive).

    >>> import stagecraft as tf
    >>> [round(float(v), 4) for v in tf.nn.softmax([1., 1.])]
    [0.5, 0.5]
    """
    return bind(OPS["softmax"], logits, axis=-1 if axis is None else int(axis))


def log_softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis``, computed stably (one primitive).

    >>> import stagecraft as tf
    >>> [round(float(v), 4) for v in tf.nn.log_softmax([1., 1.])]
    [-0.6931, -0.6931]
    """
    return bind(OPS["log_softmax"], logits, axis=-1 if axis is None else int(axis))


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
    """Cross-entropy with integer class ``labels`` (one per example) over the last axis:
    ``logsumexp(logits) - logits[label]``, and its gradient, one fused kernel each.

    A label outside ``[0, classes)`` raises ``InvalidArgumentError`` on the CPU (eagerly and
    in a ``tf.function``), as TensorFlow's CPU kernel does; on the GPU that example's loss and
    gradient are NaN, as TensorFlow's GPU kernel gives, since checking there would make the
    host wait for the GPU at every step.

    >>> import stagecraft as tf
    >>> loss = tf.nn.sparse_softmax_cross_entropy_with_logits([1, 0], [[0., 0.], [2., 0.]])
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [0.6931, 0.1269]
    """
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    if labels.dtype.name not in ("int32", "int64"):   # (TensorFlow's kernel takes these two)
        raise TypeError(f"sparse_softmax_cross_entropy_with_logits: labels must be int32 or "
                        f"int64, got {labels.dtype.name}. Cast them, e.g. "
                        f"tf.cast(labels, tf.int32).")
    rank = logits.shape.rank
    if rank == 0:
        raise ValueError("sparse_softmax_cross_entropy_with_logits: logits must have at least "
                         "one dimension (the classes), got a scalar.")
    if labels.shape.rank is not None and rank is not None:
        if labels.shape.rank != rank - 1:
            raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels must have rank "
                             f"{rank - 1} (logits rank minus 1), got shape {labels.shape}.")
        if not labels.shape.is_compatible_with(logits.shape[:-1]):
            raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels have shape "
                             f"{labels.shape} but logits have shape {logits.shape}; labels "
                             f"must match the shape of logits except for the last dimension.")
    if rank == 2:
        return bind(OPS["sparse_softmax_cross_entropy_with_logits"], logits, labels)
    # TensorFlow's kernel takes [batch, classes]: other ranks are viewed as that and back
    classes = logits.shape[-1] if rank is not None and logits.shape[-1] is not None else \
        _a.shape(logits)[-1]
    loss = bind(OPS["sparse_softmax_cross_entropy_with_logits"],
                _a.reshape(logits, [-1, classes]), _a.reshape(labels, [-1]))
    dims = labels.shape.as_list() if labels.shape.rank is not None else None
    return _a.reshape(loss, dims if dims is not None and None not in dims
                      else _a.shape(labels))


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



def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """``x`` where positive, ``alpha * x`` elsewhere.

    >>> import stagecraft as tf
    >>> tf.nn.leaky_relu([-1.0, 2.0]).numpy().tolist()
    [-0.20000000298023224, 2.0]
    """
    x = convert_to_tensor(features)
    return _m.where(_m.greater(x, 0), x, _m.multiply(x, alpha))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def selu(features: Any, name: str | None = None) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants (TensorFlow's)."""
    x = convert_to_tensor(features)
    negative = _m.multiply(_SELU_ALPHA, _m.expm1(_m.minimum(x, 0)))
    return _m.multiply(_SELU_SCALE, _m.where(_m.greater(x, 0), x, negative))


def silu(features: Any, beta: float = 1.0, name: str | None = None) -> Tensor:
    """``x * sigmoid(beta * x)`` (also ``tf.nn.swish``)."""
    x = convert_to_tensor(features)
    return _m.multiply(x, _m.sigmoid(_m.multiply(x, beta)))


swish = silu


def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Tensor:
    """Gaussian error linear unit: ``x * P(X <= x)``, X standard normal; ``approximate``
    uses TensorFlow's tanh formula. (The exact form is ``0.5 * x * (1 + erf(x / sqrt 2))``, with
    erf from Numerical Recipes' approximation of erfc, within 1.2e-7.)

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.nn.gelu([-1.0, 0.0, 1.0]).numpy().tolist()]
    [-0.1587, 0.0, 0.8413]
    """
    x = convert_to_tensor(features)
    if approximate:
        inner = _m.multiply(0.7978845608028654, _m.add(x, _m.multiply(0.044715, _m.pow(x, 3))))
        return _m.multiply(_m.multiply(0.5, x), _m.add(1.0, _m.tanh(inner)))
    return _m.multiply(_m.multiply(0.5, x), _m.add(1.0, _erf(_m.multiply(x, 0.7071067811865476))))


def _erf(x: Tensor) -> Tensor:
    """erf as ``sign(x) * (1 - erfc(|x|))``, erfc by Numerical Recipes' Chebyshev-fitted
    ``t * exp(-x^2 + poly(t))`` with ``t = 1 / (1 + |x| / 2)`` (relative error < 1.2e-7)."""
    a = _m.abs(x)
    t = _m.truediv(1.0, _m.add(1.0, _m.multiply(0.5, a)))
    coeffs = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
              -1.13520398, 1.48851587, -0.82215223, 0.17087277)
    poly = _m.add(_m.multiply(t, 0.0), coeffs[-1])
    for c in reversed(coeffs[:-1]):
        poly = _m.add(_m.multiply(poly, t), c)
    y = _m.subtract(1.0, _m.multiply(t, _m.exp(_m.add(_m.negative(_m.square(a)), poly))))
    return _m.multiply(_m.sign(x), y)


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Tensor:
    """Elementwise ``max(x, 0) - x * z + log(1 + exp(-|x|))`` for logits ``x``, labels ``z``
    (TensorFlow's stable form).

    >>> import stagecraft as tf
    >>> round(float(tf.nn.sigmoid_cross_entropy_with_logits([1.0], [0.0])[0]), 4)
    0.6931
    """
    x = convert_to_tensor(logits)
    z = _m.cast(convert_to_tensor(labels), x.dtype)
    return _m.add(_m.subtract(_m.maximum(x, 0), _m.multiply(x, z)),
                  _m.log1p(_m.exp(_m.negative(_m.abs(x)))))


def bias_add(value: Any, bias: Any, data_format: str | None = None,
             name: str | None = None) -> Tensor:
    """``value + bias`` with ``bias`` (1-D) along the last axis (``"NHWC"``) or axis 1
    (``"NCHW"``)."""
    value, bias = convert_to_tensor(value), convert_to_tensor(bias)
    if data_format in (None, "NHWC", "NWC", "NDHWC", "N...C"):
        return _m.add(value, bias)
    shape = [1, -1] + [1] * (value.shape.rank - 2)
    return _m.add(value, _a.reshape(bias, shape))


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12,
                 name: str | None = None) -> Tensor:
    """``x / sqrt(max(sum(x^2, axis), epsilon))``.

    >>> import stagecraft as tf
    >>> tf.nn.l2_normalize([3.0, 4.0]).numpy().tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    x = convert_to_tensor(x)
    square_sum = _m.reduce_sum(_m.square(x), axis=axis, keepdims=True)
    return _m.multiply(x, _m.rsqrt(_m.maximum(square_sum, epsilon)))


def moments(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
            name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and variance of ``x`` over ``axes``.

    >>> import stagecraft as tf
    >>> [float(t) for t in tf.nn.moments(tf.constant([1.0, 3.0]), axes=[0])]
    [2.0, 1.0]
    """
    x = convert_to_tensor(x)
    mean = _m.reduce_mean(x, axis=axes, keepdims=True)
    variance = _m.reduce_mean(_m.square(_m.subtract(x, mean)), axis=axes, keepdims=True)
    if not keepdims:
        mean, variance = _a.squeeze(mean, axes), _a.squeeze(variance, axes)
    return mean, variance


def embedding_lookup(params: Any, ids: Any, max_norm: Any = None,
                     name: str | None = None) -> Tensor:
    """The rows of ``params`` at ``ids``."""
    if max_norm is not None:
        raise ValueError("embedding_lookup: max_norm is not supported.")
    return _a.gather(params, ids)

__all__ = ["relu", "relu6", "elu", "sigmoid", "softplus", "softmax", "log_softmax",
           "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
           "dropout", "leaky_relu", "selu", "silu", "swish", "gelu",
           "sigmoid_cross_entropy_with_logits", "bias_add", "l2_normalize", "moments",
           "embedding_lookup"]
