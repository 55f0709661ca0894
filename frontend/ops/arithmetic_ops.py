"""TensorFlow's remaining top-level arithmetic: ``realdiv``, ``truncatemod`` and
``scalar_mul``, composed from the division and multiplication primitives."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import math_ops as _m

__all__ = ["realdiv", "truncatemod", "scalar_mul"]


def _pair(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """Both operands as tensors, a Python scalar taking the other side's dtype (TF's rule)."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x)
        return x, convert_to_tensor(y, x.dtype) if not isinstance(y, Tensor) else y
    return convert_to_tensor(x, y.dtype), y


def realdiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y for floating-point (and complex) tensors, TF's ``RealDiv``; integer tensors are
    a ``TypeError`` as in TensorFlow (use ``truncatediv`` or ``floordiv``).

    >>> import stagecraft as tf
    >>> tf.realdiv([3.0, -3.0], 2.0).numpy().tolist()
    [1.5, -1.5]
    """
    x, y = _pair(x, y)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"tf.realdiv: x and y must be floating-point or complex tensors, got "
                        f"{x.dtype.name}. For integers use tf.truncatediv (rounds toward zero) "
                        f"or tf.math.floordiv.")
    return _m.divide(x, y)


def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of the division that rounds toward zero (C's ``%`` and ``fmod``): it takes
    the sign of x, where ``tf.math.floormod`` takes the sign of y;
    ``truncatediv(x, y) * y + truncatemod(x, y) == x``.

    >>> import stagecraft as tf
    >>> tf.truncatemod([-7, 7], [2, -2]).numpy().tolist()
    [-1, 1]
    >>> tf.truncatemod([-7.5, 7.5], 2.0).numpy().tolist()
    [-1.5, 1.5]
    """
    x, y = _pair(x, y)
    if x.dtype.is_integer:
        return _m.subtract(x, _m.multiply(_m.truncatediv(x, y), y))
    # floormod of non-negative operands is exactly fmod; the sign comes from x.
    return _m.multiply(_m.sign(x), _m.floormod(_m.abs(x), _m.abs(y)))


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """``scalar * x`` for a 0-D ``scalar`` (converted to x's dtype); a non-scalar is a
    ``ValueError``.

    >>> import stagecraft as tf
    >>> tf.scalar_mul(2, tf.constant([1.5, 2.0])).numpy().tolist()
    [3.0, 4.0]
    """
    x = convert_to_tensor(x)
    s = convert_to_tensor(scalar, x.dtype)
    if s.shape.rank != 0:
        raise ValueError(f"tf.scalar_mul: only scalar multiply works, got a scalar of shape "
                         f"{s.shape}. Use tf.multiply for elementwise products.")
    return _m.multiply(s, x)
