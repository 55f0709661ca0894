"""Bitwise primitives on integers (``tf.bitwise``): and, or, xor, invert and the shifts.

Shift amounts follow TensorFlow's kernels: an amount below 0 counts as 0 and one of the bit
width or more as ``width - 1``, so no shift is undefined; a left shift keeps the low bits (a
signed value wraps), a right shift of a signed value is arithmetic (copies the sign bit).
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.elementwise import binary, unary

I = dt.INTEGERS


def clamped_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The shift amounts ``y`` limited to ``[0, bits of x's dtype - 1]`` (TensorFlow's rule).

    >>> clamped_shift(np.int8(1), np.array([-3, 2, 9], np.int8))
    array([0, 2, 7], dtype=int8)
    """
    bits = np.dtype(x.dtype).itemsize * 8
    return np.clip(y, 0, bits - 1).astype(np.asarray(y).dtype)


def _left_shift(x, y):
    return np.left_shift(x, clamped_shift(x, y))


def _right_shift(x, y):
    return np.right_shift(x, clamped_shift(x, y))


bitwise_and_op = binary("bitwise_and", np.bitwise_and, I, "Elementwise bitwise AND of integers.",
                        lo=-60, hi=60)
bitwise_or_op = binary("bitwise_or", np.bitwise_or, I, "Elementwise bitwise OR of integers.",
                       lo=-60, hi=60)
bitwise_xor_op = binary("bitwise_xor", np.bitwise_xor, I, "Elementwise bitwise XOR of integers.",
                        lo=-60, hi=60)
invert_op = unary("invert", np.invert, I,
                  "Flips every bit (~x): -x - 1 for signed integers, max - x for unsigned ones.",
                  lo=-60, hi=60)
left_shift_op = binary("left_shift", _left_shift, I,
                       "x << y keeping the low bits; y is clamped to [0, bits - 1] like "
                       "TensorFlow's kernel.", lo=-3, hi=9)
right_shift_op = binary("right_shift", _right_shift, I,
                        "x >> y, arithmetic for signed x; y is clamped to [0, bits - 1] like "
                        "TensorFlow's kernel.", lo=-3, hi=9)
