"""Clipping by norm (``tf.clip_by_norm``, ``tf.clip_by_global_norm``), composed of primitives with TensorFlow's safe
gradient at a zero norm."""
from __future__ import annotations

import functools
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


__all__ = ["clip_by_norm", "clip_by_global_norm", "global_norm"]


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """``sqrt(sum of every element's square)`` over the tensors of ``t_list`` (None skipped).

    >>> import stagecraft as tf
    >>> float(tf.linalg.global_norm([tf.constant([3.0]), tf.constant([4.0])]))
    5.0
    """
    parts = [_m.reduce_sum(_m.square(convert_to_tensor(t))) for t in t_list if t is not None]
    return _m.sqrt(functools.reduce(_m.add, parts))


def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list, Tensor]:
    """Scales every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)`` (so
    their global norm is at most ``clip_norm``); returns ``(clipped list, global norm)``.
    None entries stay None.

    >>> import stagecraft as tf
    >>> clipped, norm = tf.clip_by_global_norm([tf.constant([3.0]), tf.constant([4.0])], 1.0)
    >>> [t.numpy().tolist() for t in clipped], float(norm)
    ([[0.6000000238418579], [0.800000011920929]], 5.0)
    """
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    scale = _m.truediv(clip_norm, _m.maximum(norm, clip_norm))
    clipped = []
    for t in t_list:
        t = None if t is None else convert_to_tensor(t)
        clipped.append(None if t is None else _m.multiply(t, _m.cast(scale, t.dtype)))
    return clipped, norm
