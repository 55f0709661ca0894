"""Counting, binning and partitioning built on the segment and sorting primitives:
``tf.histogram_fixed_width(_bins)``, ``tf.math.confusion_matrix``, ``tf.math.in_top_k``,
``tf.math.count_nonzero``, ``tf.math.zero_fraction``, ``tf.math.invert_permutation``,
``tf.math.is_non_decreasing`` / ``is_strictly_increasing``, ``tf.sequence_mask``,
``tf.unravel_index``, ``tf.dynamic_partition`` and ``tf.dynamic_stitch``."""
from __future__ import annotations

from typing import Any, Sequence

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.indexing_ops import argsort, boolean_mask, sort
from stagecraft.ops.logging_ops import emit_assert
from stagecraft.ops.segment_ops import unsorted_segment_max, unsorted_segment_sum

__all__ = ["histogram_fixed_width_bins", "histogram_fixed_width", "confusion_matrix",
           "in_top_k", "count_nonzero", "zero_fraction", "invert_permutation",
           "is_non_decreasing", "is_strictly_increasing", "sequence_mask", "unravel_index",
           "dynamic_partition", "dynamic_stitch"]


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: int = 100,
                               dtype: Any = _dt.int32, name: str | None = None) -> Tensor:
    """The bin of each of ``values`` among ``nbins`` equal bins over ``value_range``
    ``[lo, hi]``; values below ``lo`` go to bin 0, values from ``hi`` on to the last.

    >>> import stagecraft as tf
    >>> tf.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], 5).numpy().tolist()
    [0, 0, 1, 2, 4]
    """
    values = convert_to_tensor(values)
    if not values.dtype.is_floating:
        values = _m.cast(values, _dt.float64)
    rng = _m.cast(value_range, values.dtype)
    lo, hi = rng[0], rng[1]
    scaled = _m.floor(_m.multiply(_m.divide(_m.subtract(values, lo), _m.subtract(hi, lo)),
                                  float(nbins)))
    return _m.cast(_m.clip_by_value(scaled, 0.0, float(nbins - 1)), dtype)


def histogram_fixed_width(values: Any, value_range: Any, nbins: int = 100,
                          dtype: Any = _dt.int32, name: str | None = None) -> Tensor:
    """How many of ``values`` fall into each of ``nbins`` equal bins over ``value_range``
    (values outside go to the first or last bin).

    >>> import stagecraft as tf
    >>> tf.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], 5).numpy().tolist()
    [2, 1, 1, 0, 1]
    """
    bins = _a.reshape(histogram_fixed_width_bins(values, value_range, nbins, _dt.int32), [-1])
    return unsorted_segment_sum(_a.ones_like(bins, dtype=dtype), bins, int(nbins))


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, weights: Any = None,
                     dtype: Any = _dt.int32, name: str | None = None) -> Tensor:
    """``[num_classes, num_classes]`` counts (or summed ``weights``) of each (label,
    prediction) pair: rows are labels, columns predictions; ``num_classes`` defaults to the
    largest label or prediction + 1.

    >>> import stagecraft as tf
    >>> tf.math.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=5).numpy()[1:3].tolist()
    [[0, 0, 1, 0, 0], [0, 0, 1, 0, 0]]
    """
    labels = _m.cast(convert_to_tensor(labels), _dt.int64)
    predictions = _m.cast(convert_to_tensor(predictions), _dt.int64)
    emit_assert(_m.reduce_all(_m.logical_and(_m.greater_equal(labels, 0),
                                             _m.greater_equal(predictions, 0))),
                "confusion_matrix: labels and predictions must be non-negative.")
    if num_classes is None:
        n = _m.add(_m.maximum(_m.reduce_max(labels), _m.reduce_max(predictions)), 1)
    else:
        n = _m.cast(num_classes, _dt.int64)
        emit_assert(_m.reduce_all(_m.logical_and(_m.less(labels, n), _m.less(predictions, n))),
                    "confusion_matrix: labels and predictions must be less than num_classes.")
    cells = _m.add(_m.multiply(labels, n), predictions)
    data = _a.ones_like(cells, dtype=dtype) if weights is None else _m.cast(weights, dtype)
    return _a.reshape(unsorted_segment_sum(data, cells, _m.multiply(n, n)), _a.stack([n, n]))


def in_top_k(targets: Any, predictions: Any, k: int, name: str | None = None) -> Tensor:
    """For each row of ``predictions`` (``[batch, classes]``), whether the class ``targets``
    names is among the ``k`` largest (classes tied at the boundary all count as in the top
    ``k``; a non-finite prediction for the target is never in it).

    >>> import stagecraft as tf
    >>> tf.math.in_top_k([2, 0], [[0.1, 0.5, 0.5], [0.1, 0.5, 0.4]], 1).numpy().tolist()
    [True, False]
    """
    predictions = convert_to_tensor(predictions)
    targets = convert_to_tensor(targets)
    target = _a.gather(predictions, targets, axis=1, batch_dims=1)
    above = _m.reduce_sum(_m.cast(_m.greater(predictions, _a.expand_dims(target, 1)),
                                  _dt.int32), axis=1)
    return _m.logical_and(_m.less(above, int(k)), _m.is_finite(target))


def count_nonzero(input: Any, axis: Any = None, keepdims: bool | None = None,  # noqa: A002
                  dtype: Any = _dt.int64, name: str | None = None) -> Tensor:
    """How many elements along ``axis`` (all when None) are not zero (not False, for bools).

    >>> import stagecraft as tf
    >>> int(tf.math.count_nonzero([[0, 1, 2], [0, 0, 3]]))
    3
    """
    x = convert_to_tensor(input)
    nonzero = _m.not_equal(x, False if x.dtype == _dt.bool_ else 0)
    return _m.reduce_sum(_m.cast(nonzero, dtype), axis=axis, keepdims=bool(keepdims))


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of the elements of ``value`` that are zero, as float32.

    >>> import stagecraft as tf
    >>> float(tf.math.zero_fraction([0.0, 1.0, 0.0, 2.0]))
    0.5
    """
    x = convert_to_tensor(value)
    return _m.reduce_mean(_m.cast(_m.equal(x, 0), _dt.float32))


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The inverse of the permutation ``x`` (a vector holding 0..n-1 once each):
    ``y[x[i]] = i``; anything else raises.

    >>> import stagecraft as tf
    >>> tf.math.invert_permutation([3, 4, 0, 2, 1]).numpy().tolist()
    [2, 4, 3, 0, 1]
    """
    x = convert_to_tensor(x)
    if x.dtype not in _dt.INTS or x.shape.rank != 1:
        raise ValueError(f"invert_permutation: x must be an int32 or int64 vector, got "
                         f"{x.dtype.name} of shape {x.shape}.")
    expected = _a.range(_a.size(x, out_type=x.dtype), dtype=x.dtype)
    emit_assert(_m.reduce_all(_m.equal(sort(x), expected)),
                "invert_permutation: x is not a permutation of 0..n-1.")
    return _m.cast(argsort(x), x.dtype)


def _ordered(x: Any, strict: bool, what: str) -> Tensor:
    x = _a.reshape(convert_to_tensor(x), [-1])
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"{what}: x must be numeric, got {x.dtype.name}.")
    later, earlier = x[1:], x[:-1]
    return _m.reduce_all(_m.greater(later, earlier) if strict
                         else _m.greater_equal(later, earlier))


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """Whether the elements of ``x`` (in row-major order) never decrease.

    >>> import stagecraft as tf
    >>> bool(tf.math.is_non_decreasing([1, 1, 2])), bool(tf.math.is_non_decreasing([2, 1]))
    (True, False)
    """
    return _ordered(x, False, "is_non_decreasing")


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """Whether each element of ``x`` (in row-major order) exceeds the one before.

    >>> import stagecraft as tf
    >>> bool(tf.math.is_strictly_increasing([1, 1, 2]))
    False
    """
    return _ordered(x, True, "is_strictly_increasing")


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = _dt.bool_,
                  name: str | None = None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` for j below ``maxlen`` (default: the largest
    length).

    >>> import stagecraft as tf
    >>> tf.sequence_mask([1, 3], 4).numpy().astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 1, 0]]
    """
    lengths = convert_to_tensor(lengths)
    if maxlen is None:
        maxlen = _m.maximum(_m.reduce_max(lengths), 0)
    positions = _a.range(_m.cast(maxlen, lengths.dtype), dtype=lengths.dtype)
    mask = _m.less(positions, _a.expand_dims(lengths, -1))
    return mask if _dt.as_dtype(dtype) == _dt.bool_ else _m.cast(mask, dtype)


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """The coordinates in an array of shape ``dims`` of flat (row-major) ``indices``: a
    ``[len(dims)]`` vector for a scalar index, ``[len(dims), n]`` for a vector of them.

    >>> import stagecraft as tf
    >>> tf.unravel_index([1, 5, 7], [3, 3]).numpy().tolist()
    [[0, 1, 2], [1, 2, 1]]
    """
    indices = convert_to_tensor(indices)
    dims = _m.cast(convert_to_tensor(dims), indices.dtype)
    if dims.shape.rank != 1 or dims.shape[0] is None:
        raise ValueError("unravel_index: dims must be a vector of known length.")
    total = _m.reduce_prod(dims)
    emit_assert(_m.reduce_all(_m.logical_and(_m.greater_equal(indices, 0),
                                             _m.less(indices, total))),
                "unravel_index: index out of bounds for the shape dims.")
    coords, rest = [], indices
    for k in reversed(range(dims.shape[0])):
        coords.append(_m.floormod(rest, dims[k]))
        rest = _m.floordiv(rest, dims[k])
    return _a.stack(coords[::-1], axis=0)


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list:
    """``num_partitions`` tensors: the rows of ``data`` (indexed by the dims ``partitions``
    covers) whose partition number is 0, 1, ..., in their order.

    >>> import stagecraft as tf
    >>> [p.numpy().tolist() for p in tf.dynamic_partition([10, 20, 30, 40], [1, 0, 1, 1], 2)]
    [[20], [10, 30, 40]]
    """
    data, partitions = convert_to_tensor(data), convert_to_tensor(partitions)
    emit_assert(_m.reduce_all(_m.logical_and(
        _m.greater_equal(partitions, 0), _m.less(partitions, int(num_partitions)))),
        f"dynamic_partition: partitions must be in [0, {int(num_partitions)}).")
    return [boolean_mask(data, _m.equal(partitions, p)) for p in range(int(num_partitions))]


def dynamic_stitch(indices: Sequence[Any], data: Sequence[Any], name: str | None = None) -> Tensor:
    """Merges ``data[m]`` into one tensor at the rows ``indices[m]`` name: ``merged[
    indices[m][i]] = data[m][i]``; of repeated indices the last (in order of m, then i) wins.
    Rows no index names are zero.

    >>> import stagecraft as tf
    >>> tf.dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]]).numpy().tolist()
    [1.0, 3.0, 4.0]
    """
    idx = [_a.reshape(_m.cast(i, _dt.int64), [-1]) for i in indices]
    flat_idx = _a.concat(idx, 0)
    rows = []
    for i, d in zip(indices, data):
        d = convert_to_tensor(d)
        k = convert_to_tensor(i).shape.rank
        rows.append(_a.reshape(d, [-1] + d.shape.as_list()[k:]))
    flat_data = _a.concat(rows, 0)
    n = _m.maximum(_m.add(_m.reduce_max(flat_idx), 1), 0)
    order = _a.range(_a.size(flat_idx, out_type=_dt.int64), dtype=_dt.int64)
    last = unsorted_segment_max(order, flat_idx, n)     # the last writer of each row
    present = _m.greater_equal(last, 0)
    taken = _a.gather(flat_data, _m.maximum(last, 0))
    keep = _a.reshape(present, _a.concat([[-1], _a.ones([taken.shape.rank - 1], _dt.int32)], 0))
    return _m.where(keep, taken, _a.zeros_like(taken))
