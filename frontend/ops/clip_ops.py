"""Clipping by norm (``tf.clip_by_norm``), composed of primitives with TensorFlow's safe
gradient at a zero norm."""
from __future__ import annotations

from typing import Any

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``: scales ``t`` down so that its L2
    norm (over ``axes``, all by default) is at most ``clip_norm``.

    >>> import stagecraft as tf
    >>> tf.clip_by_norm(tf.constant([3.0, 4.0]), 1.0).numpy().tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    t = convert_to_tensor(t)
    clip_norm = _m.cast(clip_norm, t.dtype)
    l2sum = _m.reduce_sum(_m.multiply(t, t), axes, keepdims=True)
    nonzero = _m.greater(l2sum, 0)
    # sqrt only where the sum is positive: its gradient at 0 would be inf (then 0 * inf = nan).
    safe = _m.where(nonzero, l2sum, _a.ones_like(l2sum))
    l2norm = _m.where(nonzero, _m.sqrt(safe), l2sum)
    return _m.truediv(_m.multiply(t, clip_norm), _m.maximum(l2norm, clip_norm))


__all__ = ["clip_by_norm"]
