"""Math built from primitives with numerical care: ``reduce_logsumexp`` (the max taken out
first), ``reduce_variance``/``reduce_std``, ``reduce_euclidean_norm``, ``divide_no_nan``,
``multiply_no_nan``; their gradients come from the primitives' rules."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops.math_ops import (add, divide, equal, exp, is_finite, log, multiply,
                                     reduce_max, reduce_mean, reduce_sum, sqrt, square,
                                     subtract, where)

__all__ = ["reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm",
           "divide_no_nan", "multiply_no_nan"]
def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed stably (the max is taken out first).

    >>> import stagecraft as tf
    >>> round(float(tf.math.reduce_logsumexp([1000.0, 1000.0])), 2)  # float32: 1000 + log 2
    1000.69
    """
    x = convert_to_tensor(input_tensor)
    peak = _a.stop_gradient(reduce_max(x, axis=axis, keepdims=True))
    peak = where(is_finite(peak), peak, _a.zeros_like(peak))
    total = log(reduce_sum(exp(subtract(x, peak)), axis=axis, keepdims=True))
    out = add(total, peak)
    return out if keepdims else squeeze_axes(out, axis, x.shape.rank)


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """The variance over ``axis`` (the mean squared deviation, as NumPy's ``var``).

    >>> import stagecraft as tf
    >>> float(tf.math.reduce_variance([1.0, 2.0, 3.0, 4.0]))
    1.25
    """
    x = convert_to_tensor(input_tensor)
    mean = reduce_mean(x, axis=axis, keepdims=True)
    return reduce_mean(square(subtract(x, mean)), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """The standard deviation over ``axis``."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """``sqrt(sum(x^2))`` over ``axis``."""
    return sqrt(reduce_sum(square(convert_to_tensor(input_tensor)), axis=axis,
                           keepdims=keepdims))


def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y``, and 0 where ``y`` is 0.

    >>> import stagecraft as tf
    >>> tf.math.divide_no_nan([1.0, 1.0], [0.0, 2.0]).numpy().tolist()
    [0.0, 0.5]
    """
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    zero = equal(y, 0)
    quotient = divide(x, where(zero, _a.ones_like(y), y))
    return where(zero, _a.zeros_like(quotient), quotient)


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * y``, and 0 where ``y`` is 0 (even if ``x`` is inf or NaN)."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    product = multiply(x, y)
    return where(equal(y, 0), _a.zeros_like(product), product)


def squeeze_axes(x: Tensor, axis: Any, rank: int) -> Tensor:
    """``x`` (reduced with keepdims) without the reduced axes."""
    if axis is None:
        return _a.reshape(x, [])
    axes = [axis] if isinstance(axis, int) else list(axis)
    return _a.squeeze(x, [a % rank for a in axes])

