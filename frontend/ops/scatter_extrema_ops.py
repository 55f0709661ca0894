"""``tf.tensor_scatter_nd_max`` / ``tf.tensor_scatter_nd_min``: the elementwise max (min) of a
tensor and the updates scattered at ``indices``, composed as a segment max (min) of the
updates over linear positions and an elementwise max (min) with the tensor, so they run
eagerly and staged and carry gradients through those ops."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import segment_ops as _s
from stagecraft.ops.logging_ops import emit_assert

__all__ = ["tensor_scatter_nd_max", "tensor_scatter_nd_min"]


def _scatter_extremum(fn: str, tensor: Any, indices: Any, updates: Any,
                      segment: Callable, combine: Callable) -> Tensor:
    tensor = convert_to_tensor(tensor)
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates, tensor.dtype) if not isinstance(updates, Tensor) \
        else updates
    if indices.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{fn}: indices must be int32 or int64, got {indices.dtype.name}.")
    if updates.dtype != tensor.dtype:
        raise TypeError(f"{fn}: updates ({updates.dtype.name}) must have the tensor's dtype "
                        f"({tensor.dtype.name}).")
    rank, k = tensor.shape.rank, indices.shape[-1] if indices.shape.rank else None
    if rank is None or k is None:
        raise ValueError(f"{fn}: the rank of tensor and the last dimension of indices must be "
                         f"known while tracing.")
    if k > rank:
        raise ValueError(f"{fn}: indices.shape[-1] ({k}) exceeds the rank of tensor ({rank}).")
    dims = tensor.shape.as_list()
    want = indices.shape.as_list()[:-1] + dims[k:] if indices.shape.rank else None
    if want is not None and updates.shape.rank is not None and \
            not updates.shape.is_compatible_with(want):
        raise ValueError(f"{fn}: updates must have shape indices.shape[:-1] + "
                         f"tensor.shape[indices.shape[-1]:] = {want}, got {updates.shape}.")
    idx = _m.cast(indices, _dt.int64)
    static = None not in dims
    # the indexed dims, their row-major strides and count: constants when known now
    lead = convert_to_tensor(np.asarray(dims[:k], np.int64)) if static else \
        _a.shape(tensor, _dt.int64)[:k]
    strides = _m.cumprod(lead, exclusive=True, reverse=True)
    segments = int(np.prod(dims[:k], dtype=np.int64)) if static else _m.reduce_prod(lead)
    inside = _m.reduce_all(_m.logical_and(_m.greater_equal(idx, 0), _m.less(idx, lead)))
    message = f"{fn}: an index is outside the shape {dims[:k]} of the indexed dimensions."
    if STATE.get().graph is None:
        if not bool(inside.numpy()):
            bad = indices.numpy().reshape(-1, k)
            raise InvalidArgumentError(f"{message} Indices: {bad.tolist()[:10]}")
    else:
        emit_assert(inside, message)
    linear = _a.reshape(_m.reduce_sum(_m.multiply(idx, strides), axis=-1), [-1])
    rest = [d if d is not None else _a.shape(tensor)[k + i] for i, d in enumerate(dims[k:])]
    scattered = segment(_a.reshape(updates, [-1, *rest]), linear, segments)
    flat = _a.reshape(tensor, [segments if static else -1, *rest])
    result = combine(flat, scattered)
    return _a.reshape(result, dims) if static else _a.reshape(result, _a.shape(tensor))


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Tensor:
    """``tensor`` with each slice at ``indices`` replaced by its max with the ``updates``
    there (repeated indices take the max of all); indices outside the shape raise
    ``InvalidArgumentError``.

    >>> import stagecraft as tf
    >>> tf.tensor_scatter_nd_max([1, 5, 3], [[0], [1], [0]], [4, 2, 7]).numpy().tolist()
    [7, 5, 3]
    """
    return _scatter_extremum("tf.tensor_scatter_nd_max", tensor, indices, updates,
                             _s.unsorted_segment_max, _m.maximum)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Tensor:
    """``tensor`` with each slice at ``indices`` replaced by its min with the ``updates``
    there.

    >>> import stagecraft as tf
    >>> tf.tensor_scatter_nd_min([[1, 5], [3, 3]], [[1]], [[0, 9]]).numpy().tolist()
    [[1, 5], [0, 3]]
    """
    return _scatter_extremum("tf.tensor_scatter_nd_min", tensor, indices, updates,
                             _s.unsorted_segment_min, _m.minimum)
