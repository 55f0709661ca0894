"""``stagecraft.bitwise``: TensorFlow's bitwise ops on integer tensors (``tf.bitwise``).

Both operands of a binary op must have the same integer dtype (no promotion; Python ints adopt
the tensor's dtype when they fit). The operators ``&``, ``|``, ``^`` and ``~`` on integer
tensors call these, as in TensorFlow; on bool tensors they are the logical ops.
"""
from __future__ import annotations

from typing import Any

from stagecraft.eager.bind import bind
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS as _O


def bitwise_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x & y`` of integer tensors.

    >>> import stagecraft as tf
    >>> tf.bitwise.bitwise_and(tf.constant([12, 10], tf.uint8), 6).numpy()
    array([4, 2], dtype=uint8)
    """
    return bind(_O["bitwise_and"], x, y)


def bitwise_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x | y`` of integer tensors.

    >>> import stagecraft as tf
    >>> tf.bitwise.bitwise_or(tf.constant([12, 10], tf.int16), 3).numpy()
    array([15, 11], dtype=int16)
    """
    return bind(_O["bitwise_or"], x, y)


def bitwise_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x ^ y`` of integer tensors.

    >>> import stagecraft as tf
    >>> tf.bitwise.bitwise_xor(tf.constant([12, 10]), 6).numpy()
    array([10, 12], dtype=int32)
    """
    return bind(_O["bitwise_xor"], x, y)


def invert(x: Any, name: str | None = None) -> Tensor:
    """Flips every bit: ``-x - 1`` for signed integers, ``max - x`` for unsigned ones.

    >>> import stagecraft as tf
    >>> tf.bitwise.invert(tf.constant([0, 5], tf.uint8)).numpy()
    array([255, 250], dtype=uint8)
    """
    return bind(_O["invert"], x)


def left_shift(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x << y`` keeping the low bits (signed values wrap). As in TensorFlow's kernel, a
    shift below 0 counts as 0 and one of the bit width or more as ``width - 1``.

    >>> import stagecraft as tf
    >>> tf.bitwise.left_shift(tf.constant([1, 1, 3], tf.int8), tf.constant([2, 7, 7], tf.int8)).numpy()
    array([   4, -128, -128], dtype=int8)
    """
    return bind(_O["left_shift"], x, y)


def right_shift(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x >> y``: arithmetic (the sign bit is copied) for signed ``x``, logical for unsigned;
    the shift is clamped to ``[0, width - 1]`` like ``left_shift``.

    >>> import stagecraft as tf
    >>> tf.bitwise.right_shift(tf.constant([-16, 16]), 2).numpy()
    array([-4,  4], dtype=int32)
    """
    return bind(_O["right_shift"], x, y)


__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
