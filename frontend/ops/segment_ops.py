"""Segment reductions (``tf.math.segment_*``, ``tf.math.unsorted_segment_*``),
``tf.math.bincount``, ``tf.unique`` / ``tf.unique_with_counts`` and ``tf.searchsorted``.

All reductions are the ``segment_reduce`` primitive (``ir/ops/segment.py``); means and
``sqrt_n`` divide its sum by the segment sizes, so their gradients come from the primitive's.
``unique`` numbers the distinct values in order of first occurrence (the ``unique_index``
primitive) and takes each value's first position with a segment minimum: its outputs have a
size known only when the function runs, staged too.
"""
from __future__ import annotations

import collections
from typing import Any

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.logging_ops import emit_assert

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
           "unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
           "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
           "bincount", "unique", "unique_with_counts", "searchsorted"]

Unique = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _known(n: Tensor) -> int | None:
    """The value of the scalar ``n`` when it is known now (an eager tensor), else None."""
    value = getattr(n, "_value", None)
    return None if value is None else int(value)


def _reduce(data: Any, segment_ids: Any, num_segments: Any, mode: str,
            sorted: bool) -> Tensor:  # noqa: A002
    ids = convert_to_tensor(segment_ids)
    if ids.dtype not in _dt.INTS:
        raise TypeError(f"segment ops: segment_ids must be int32 or int64, got "
                        f"{ids.dtype.name}.")
    num = convert_to_tensor(num_segments)
    return bind(OPS["segment_reduce"], data, ids, num, mode=mode, sorted=sorted,
                static=(_known(num),))


def _sorted_count(ids: Tensor) -> Tensor:
    """``segment_ids[-1] + 1`` (0 for no ids): the number of segments of the sorted ops."""
    return _m.maximum(_m.add(_m.reduce_max(ids), 1), 0)


def _sorted(data: Any, segment_ids: Any, mode: str) -> Tensor:
    ids = convert_to_tensor(segment_ids)
    return _reduce(data, ids, _sorted_count(ids), mode, True)


def _sizes(data: Tensor, ids: Tensor, num_segments: Any, sorted: bool) -> Tensor:  # noqa: A002
    """The number of rows in each segment (at least 1), shaped to divide the reduced
    data: ``[num_segments, 1, ..., 1]``."""
    ones = _a.ones_like(ids, dtype=data.dtype)
    counts = _m.maximum(_reduce(ones, ids, num_segments, "sum", sorted), 1)
    rank, k = data.shape.rank, ids.shape.rank
    if rank is None or k is None:
        raise ValueError("segment mean: the ranks of data and segment_ids must be known.")
    return _a.reshape(counts, [-1] + [1] * (rank - k))


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Sums of the rows of ``data`` per segment; ``segment_ids`` (a vector, one id per row)
    must be sorted and non-negative; the result has ``segment_ids[-1] + 1`` rows (missing
    ids give zero rows).

    >>> import stagecraft as tf
    >>> tf.math.segment_sum([[1, 2], [3, 4], [5, 6]], [0, 0, 2]).numpy().tolist()
    [[4, 6], [0, 0], [5, 6]]
    """
    return _sorted(data, segment_ids, "sum")


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Products of the rows of ``data`` per sorted segment id (1 where an id is missing).

    >>> import stagecraft as tf
    >>> tf.math.segment_prod([2.0, 3.0, 4.0], [0, 0, 2]).numpy().tolist()
    [6.0, 1.0, 4.0]
    """
    return _sorted(data, segment_ids, "prod")


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Maxima of the rows of ``data`` per sorted segment id (0 where an id is missing).

    >>> import stagecraft as tf
    >>> tf.math.segment_max([2.0, -3.0, -4.0], [0, 0, 2]).numpy().tolist()
    [2.0, 0.0, -4.0]
    """
    return _sorted(data, segment_ids, "max")


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Minima of the rows of ``data`` per sorted segment id (0 where an id is missing)."""
    return _sorted(data, segment_ids, "min")


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Means of the rows of ``data`` per sorted segment id (0 where an id is missing;
    integer means truncate toward zero, as TensorFlow's).

    >>> import stagecraft as tf
    >>> tf.math.segment_mean([1.0, 2.0, 6.0], [0, 0, 1]).numpy().tolist()
    [1.5, 6.0]
    """
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    n = _sorted_count(ids)
    total = _reduce(data, ids, n, "sum", True)
    sizes = _sizes(data, ids, n, True)
    return _m.divide(total, sizes) if data.dtype.is_floating else _m.truncatediv(total, sizes)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """Sums of the rows of ``data`` (indexed by the leading dims that ``segment_ids`` covers)
    per id, in ``num_segments`` rows; rows with a negative id are dropped, an id at or beyond
    ``num_segments`` raises.

    >>> import stagecraft as tf
    >>> tf.math.unsorted_segment_sum([1, 2, 3, 4], [1, 0, 1, -1], 3).numpy().tolist()
    [2, 4, 0]
    """
    return _reduce(data, segment_ids, num_segments, "sum", False)


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """Products of the rows of ``data`` per id (1 for an empty segment)."""
    return _reduce(data, segment_ids, num_segments, "prod", False)


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """Maxima of the rows of ``data`` per id; an empty segment holds the dtype's lowest
    value (``-3.4028235e38`` for float32), as in TensorFlow.

    >>> import stagecraft as tf
    >>> tf.math.unsorted_segment_max([1, 5, 3], [1, 1, 0], 3).numpy().tolist()
    [3, 5, -2147483648]
    """
    return _reduce(data, segment_ids, num_segments, "max", False)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """Minima of the rows of ``data`` per id; an empty segment holds the dtype's highest
    value."""
    return _reduce(data, segment_ids, num_segments, "min", False)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """Means of the rows of ``data`` per id (0 for an empty segment; integer data give
    float64, TensorFlow's true division).

    >>> import stagecraft as tf
    >>> tf.math.unsorted_segment_mean([1.0, 2.0, 6.0], [1, 1, 0], 3).numpy().tolist()
    [6.0, 1.5, 0.0]
    """
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    total = _reduce(data, ids, num_segments, "sum", False)
    return _m.divide(total, _sizes(data, ids, num_segments, False))


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None) -> Tensor:
    """Sums of the rows of ``data`` per id divided by the square root of the segment's size
    (0 for an empty segment); floating data only.

    >>> import stagecraft as tf
    >>> tf.math.unsorted_segment_sqrt_n([[3.0], [1.0]], [0, 0], 1).numpy()
    array([[2.828427]], dtype=float32)
    """
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    if not data.dtype.is_floating:
        raise TypeError(f"unsorted_segment_sqrt_n: data must be float32 or float64, got "
                        f"{data.dtype.name}.")
    total = _reduce(data, ids, num_segments, "sum", False)
    return _m.divide(total, _m.sqrt(_sizes(data, ids, num_segments, False)))


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = _dt.int32, name: str | None = None, axis: int | None = None,
             binary_output: bool = False) -> Tensor:
    """How often each value ``0..max(arr)`` occurs in the non-negative integers ``arr``
    (the sum of the matching ``weights`` when given): a vector of ``max(arr) + 1`` entries,
    at least ``minlength`` and at most ``maxlength`` (larger values are dropped).
    ``axis=-1`` counts each row of a 2-D ``arr`` separately; ``binary_output`` gives 1 for
    present values instead of counts.

    >>> import stagecraft as tf
    >>> tf.math.bincount([1, 1, 3], minlength=5).numpy().tolist()
    [0, 2, 0, 1, 0]
    >>> tf.math.bincount([[1, 0], [1, 1]], axis=-1).numpy().tolist()
    [[1, 1], [0, 2]]
    """
    arr = convert_to_tensor(arr)
    if arr.dtype not in _dt.INTS:
        raise TypeError(f"bincount: arr must be int32 or int64, got {arr.dtype.name}.")
    if axis not in (None, 0, -1):
        raise ValueError(f"bincount: axis must be None, 0 or -1, got {axis}.")
    if binary_output and weights is not None:
        raise ValueError("bincount: Arguments `binary_output` and `weights` are mutually "
                         "exclusive. Please specify only one.")
    rows = axis == -1
    if rows and arr.shape.rank != 2:
        raise ValueError(f"bincount: axis=-1 needs a 2-D arr, got shape {arr.shape}.")
    flat = _a.reshape(arr, [-1])
    emit_assert(_m.reduce_all(_m.greater_equal(flat, 0)),
                "bincount: Input arr must be non-negative!")   # TensorFlow's message
    length = _m.maximum(_m.add(_m.reduce_max(flat), 1), 0)
    if minlength is not None:
        length = _m.maximum(length, _m.cast(minlength, arr.dtype))
    if maxlength is not None:
        length = _m.minimum(length, _m.cast(maxlength, arr.dtype))
    ids = _m.where(_m.less(flat, length), flat, _a.fill(_a.shape(flat), -1))
    out_dtype = _dt.as_dtype(dtype) if weights is None else convert_to_tensor(weights).dtype
    data = _a.ones_like(flat, dtype=out_dtype) if weights is None else \
        _a.reshape(weights, [-1])
    if not rows:
        counts = unsorted_segment_sum(data, ids, length)
    else:
        n_rows = _a.shape(arr, out_type=arr.dtype)[0]
        row = _a.reshape(_a.fill(_a.shape(arr, out_type=arr.dtype), 0) +
                         _a.expand_dims(_a.range(n_rows, dtype=arr.dtype), 1), [-1])
        ids = _m.where(_m.less(ids, 0), ids, ids + row * length)
        counts = _a.reshape(unsorted_segment_sum(data, ids, n_rows * length),
                            _a.stack([n_rows, length]))
    if binary_output:
        return _m.cast(_m.greater(counts, 0), out_dtype)
    return counts


def _unique(x: Any, out_idx: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    x = convert_to_tensor(x)
    d = _dt.as_dtype(out_idx)
    idx = bind(OPS["unique_index"], x, out_type=d)
    count = _m.maximum(_m.add(_m.reduce_max(idx), 1), 0)
    first = _reduce(_a.range(_a.size(x, out_type=d)), idx, count, "min", False)
    return _a.gather(x, first), idx, count, first


def unique(x: Any, out_idx: Any = _dt.int32, name: str | None = None) -> Unique:
    """The distinct values of the vector ``x`` in order of first occurrence (``y``) and, for
    each element, the position of its value in ``y`` (``idx``, of dtype ``out_idx``).

    >>> import stagecraft as tf
    >>> y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    >>> y.numpy().tolist(), idx.numpy().tolist()
    ([1, 2, 4, 7, 8], [0, 0, 1, 2, 2, 2, 3, 4, 4])
    """
    y, idx, _, _ = _unique(x, out_idx)
    return Unique(y, idx)


def unique_with_counts(x: Any, out_idx: Any = _dt.int32,
                       name: str | None = None) -> UniqueWithCounts:
    """``unique`` plus how often each distinct value occurs (``count``, of dtype
    ``out_idx``).

    >>> import stagecraft as tf
    >>> tf.unique_with_counts([5, 3, 5]).count.numpy().tolist()
    [2, 1]
    """
    y, idx, n, _ = _unique(x, out_idx)
    return UniqueWithCounts(y, idx, _reduce(_a.ones_like(idx), idx, n, "sum", False))


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left",
                 out_type: Any = _dt.int32, name: str | None = None) -> Tensor:
    """Where each of ``values`` would go in the sorted last axis of ``sorted_sequence``
    (all other dimensions match, row by row): before equal elements (``side="left"``) or
    after them (``"right"``).

    >>> import stagecraft as tf
    >>> tf.searchsorted([1, 3, 3, 7], [3, 8, 0], side="right").numpy().tolist()
    [3, 4, 0]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}.")
    return bind(OPS["searchsorted"], sorted_sequence, values, side=side,
                out_type=_dt.as_dtype(out_type))
