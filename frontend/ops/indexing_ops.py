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
           "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "argsort", "sort", "top_k"]


def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """The int32 positions that sort ``values`` along ``axis`` (always stable here: equal
    values keep their order, which ``stable=False`` also allows).

    >>> import stagecraft as tf
    >>> tf.argsort([3.0, 1.0, 2.0], direction="DESCENDING").numpy().tolist()
    [0, 2, 1]
    """
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"argsort: direction must be ASCENDING or DESCENDING; got "
                         f"{direction!r}.")
    return bind(OPS["argsort"], values, axis=axis, descending=direction == "DESCENDING")


def _take_along(values: Tensor, order: Tensor, axis: int) -> Tensor:
    """``values`` rearranged along ``axis`` by ``order`` (a gather per line, differentiable
    through ``gather``)."""
    rank = values.shape.rank
    axis %= rank
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = _a.transpose(values, perm) if axis != rank - 1 else values
    moved_order = _a.transpose(order, perm) if axis != rank - 1 else order
    taken = _a.gather(moved, moved_order, axis=rank - 1, batch_dims=rank - 1)
    if axis == rank - 1:
        return taken
    inverse = list(np.argsort(perm))
    return _a.transpose(taken, inverse)


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING",
         name: str | None = None) -> Tensor:
    """``values`` sorted along ``axis``; its gradient flows back to the sorted elements.

    >>> import stagecraft as tf
    >>> tf.sort([[3, 1, 2]]).numpy().tolist()
    [[1, 2, 3]]
    """
    values = convert_to_tensor(values)
    return _take_along(values, argsort(values, axis, direction), axis)


def top_k(input: Any, k: int = 1, sorted: bool = True,  # noqa: A002
          name: str | None = None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest values along the last axis and their int32 positions (of equal
    values, the first come first).

    >>> import stagecraft as tf
    >>> values, indices = tf.math.top_k([1.0, 5.0, 3.0, 5.0], k=2)
    >>> values.numpy().tolist(), indices.numpy().tolist()
    ([5.0, 5.0], [1, 3])
    """
    x = convert_to_tensor(input)
    n = x.shape[-1]
    if n is not None and not 0 <= int(k) <= n:
        raise ValueError(f"top_k: k must be in [0, {n}] (the last dimension); got {k}.")
    indices = argsort(x, -1, "DESCENDING")[..., :int(k)]
    return _take_along(x, indices, -1), indices


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
