"""``tf.image.convert_image_dtype``: integer images span [0, dtype.max], float images [0, 1];
converting rescales between the two conventions (TensorFlow 2's rules, including its rounding
and its optional saturation)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import const


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Casts ``value`` to ``dtype``, first clipping it to the range both dtypes can hold (so
    out-of-range values saturate instead of wrapping around).

    >>> import stagecraft as tf
    >>> tf.image.convert_image_dtype(tf.constant([-0.5, 0.5, 2.0]), tf.uint8,
    ...                              saturate=True).numpy().tolist()
    [0, 127, 255]
    """
    x = convert_to_tensor(value)
    d = _dt.as_dtype(dtype)
    if x.dtype == d:
        return x
    lo, hi = max(x.dtype.min, d.min), min(x.dtype.max, d.max)
    if lo > x.dtype.min:
        x = _m.maximum(x, const(lo, x.dtype))
    if hi < x.dtype.max:
        bound = np.asarray(hi, x.dtype.np)
        if x.dtype.is_floating and float(bound) > hi:  # int32/int64 max rounds up as a float
            bound = np.nextafter(bound, bound.dtype.type(0))
        x = _m.minimum(x, convert_to_tensor(bound))
    return _m.cast(x, d)


def _check(d: _dt.DType, what: str) -> None:
    if not (d.is_floating or d.is_integer) or d.is_bool:
        raise AttributeError(f"tf.image.convert_image_dtype: {what} must be either floating "
                             f"point or integer, got {d.name}.")


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """Converts ``image`` to ``dtype``, rescaling values: integer images hold [0, MAX] of their
    dtype, float images [0, 1). Float to integer multiplies by ``MAX + 0.5`` and casts
    (``saturate=True`` clips first, else values outside [0, 1] wrap as the cast does); integer
    to float divides by the input's MAX; integer to integer shifts the range; float to float
    only casts.

    >>> import stagecraft as tf
    >>> tf.image.convert_image_dtype(tf.constant([0, 128, 255], tf.uint8),
    ...                              tf.float32).numpy().astype(float).round(4).tolist()
    [0.0, 0.502, 1.0]
    >>> tf.image.convert_image_dtype(tf.constant([0.0, 0.5, 1.0]), tf.uint8).numpy().tolist()
    [0, 127, 255]
    """
    image = convert_to_tensor(image)
    d = _dt.as_dtype(dtype)
    _check(d, "dtype")
    _check(image.dtype, "the image's dtype")
    src = image.dtype
    if d == src:
        return _a.identity(image)
    if src.is_integer and d.is_integer:
        if src.max > d.max:  # scale down first, then cast (in.max lands below out.max + 1)
            scaled = _m.floordiv(image, const((src.max + 1) // (d.max + 1), src))
            return saturate_cast(scaled, d) if saturate else _m.cast(scaled, d)
        cast = saturate_cast(image, d) if saturate else _m.cast(image, d)
        return _m.multiply(cast, const((d.max + 1) // (src.max + 1), d))
    if src.is_floating and d.is_floating:
        return _m.cast(image, d)
    if src.is_integer:  # to float: cast, then scale
        return _m.multiply(_m.cast(image, d), const(1.0 / src.max, d))
    scaled = _m.multiply(image, const(d.max + 0.5, src))  # from float: scale, then cast
    return saturate_cast(scaled, d) if saturate else _m.cast(scaled, d)


__all__ = ["convert_image_dtype", "saturate_cast"]
