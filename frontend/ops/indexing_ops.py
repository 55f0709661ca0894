"""Indexing with index tensors: ``gather_nd``, ``boolean_mask``, ``scatter_nd`` and
``tensor_scatter_nd_update/add/sub``. ``gather_nd`` and ``boolean_mask`` are compositions
(linear positions, then ``gather``); the scatters are the ``scatter_nd`` primitive, which
raises for indices outside the shape as TensorFlow does on the CPU."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["gather_nd", "boolean_mask", "scatter_nd", "tensor_scatter_nd_update",
           "tensor_scatter_nd_add", "tensor_scatter_nd_sub"]


def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None) -> Tensor:
    """The slices of ``params`` at ``indices``: the last axis of ``indices`` holds a position
    among the leading dims of ``params``.

    >>> import stagecraft as tf
    >>> tf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]).numpy().tolist()
    [3, 2]
    """
    if batch_dims:
        raise ValueError("gather_nd: batch_dims > 0 is not supported.")
    params, indices = convert_to_tensor(params), convert_to_tensor(indices)
    k = indices.shape[-1]
    dims = params.shape.as_list()
    if k is None or None in dims[:k]:
        raise ValueError("gather_nd: the last dimension of indices and the indexed dimensions "
                         "of params must be known.")
    strides = np.cumprod([1, *dims[1:k][::-1]])[::-1].astype(np.int64)
    linear = _m.reduce_sum(_m.multiply(_m.cast(indices, _dt.int64),
                                       convert_to_tensor(strides)), axis=-1)
    flat = _a.reshape(params, [int(np.prod(dims[:k])), *[-1 if d is None else d
                                                           for d in dims[k:]]])
    return _a.gather(flat, linear)


def boolean_mask(tensor: Any, mask: Any, axis: Any = None, name: str | None = None) -> Tensor:
    """The elements (or slices) of ``tensor`` where ``mask`` (of the leading dims' shape) is
    True, in row-major order.

    >>> import stagecraft as tf
    >>> tf.boolean_mask([[1, 2], [3, 4], [5, 6]], [True, False, True]).numpy().tolist()
    [[1, 2], [5, 6]]
    """
    if axis not in (None, 0):
        raise ValueError("boolean_mask: only axis=0 (the mask covers the leading dims) is "
                         "supported.")
    tensor, mask = convert_to_tensor(tensor), convert_to_tensor(mask)
    if mask.dtype != _dt.bool_:
        raise TypeError(f"boolean_mask: mask must be a bool tensor; got {mask.dtype.name}.")
    return gather_nd(tensor, bind(OPS["where_indices"], mask))


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any,
                             name: str | None = None) -> Tensor:
    """``tensor`` with the slices at ``indices`` replaced by ``updates`` (of a repeated index,
    the last update wins).

    >>> import stagecraft as tf
    >>> tf.tensor_scatter_nd_update([1, 2, 3], [[2], [0]], [9, 8]).numpy().tolist()
    [8, 2, 9]
    """
    return bind(OPS["scatter_nd"], tensor, indices, updates, mode="update")


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Tensor:
    """``tensor`` with ``updates`` added at ``indices`` (repeated indices add up)."""
    return bind(OPS["scatter_nd"], tensor, indices, updates, mode="add")


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Tensor:
    """``tensor`` with ``updates`` subtracted at ``indices``."""
    return bind(OPS["scatter_nd"], tensor, indices, updates, mode="sub")


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at ``indices``.

    >>> import stagecraft as tf
    >>> tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5]).numpy().tolist()
    [0.0, 4.0, 0.0, 2.0, 0.0]
    """
    updates = convert_to_tensor(updates)
    return tensor_scatter_nd_add(_a.zeros(shape, dtype=updates.dtype), indices, updates)
