"""``tf.nn.fractional_max_pool`` / ``fractional_avg_pool`` (Graham, "Fractional Max-Pooling",
2014): pooling regions of sizes ``floor(alpha)`` and ``ceil(alpha)`` for a non-integer ratio
``alpha``, drawn anew on every call. The row and column boundary sequences are drawn with the
Philox random ops (TensorFlow's seed rules: ``seed=0`` is an unseeded op), so the numbers
differ from TensorFlow's; everything else follows its definition: ``pseudo_random`` takes
``a_i = ceil(alpha (i + u)) - ceil(alpha u)`` for one uniform ``u``, otherwise the larger
regions sit at random places; ``overlapping`` makes each region include the next one's first
row/column. The pooling is a gather of each region's rows (then columns) padded to the longest
region, so gradients come from gather and the reductions."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.indexing_ops import argsort
from stagecraft.ops.random_ops import draw, seed_tensor

__all__ = ["fractional_max_pool", "fractional_avg_pool"]


def _ratios(pooling_ratio: Any, what: str) -> tuple[float, float]:
    r = [float(v) for v in np.asarray(pooling_ratio, np.float64).reshape(-1)]
    if len(r) == 1:
        r = [1.0, r[0], r[0], 1.0]
    elif len(r) == 2:
        r = [1.0, r[0], r[1], 1.0]
    if len(r) != 4 or r[0] != 1.0 or r[3] != 1.0 or min(r) < 1.0:
        raise ValueError(f"{what}: pooling_ratio must be >= 1 for rows and columns and 1.0 for "
                         f"the batch and channels ([1.0, rows, cols, 1.0]), got {pooling_ratio}.")
    return r[1], r[2]


def _sequence(size: int, out: int, pseudo_random: bool, seed: Tensor) -> Tensor:
    """The ``out + 1`` region boundaries (int64, 0 to ``size``) along one dimension."""
    if size % out == 0:
        return _m.cast(_a.range(0, size + 1, size // out), _dt.int64)
    if pseudo_random:
        alpha = size / out
        # u below both bounds keeps every region floor(alpha) or ceil(alpha) long
        k = size // out
        u_max = min((k + 2) / alpha - 1, (size + 1 - k) / alpha - (out - 1))
        u = _m.multiply(draw("random_uniform", seed, [1], _dt.float64), u_max)
        steps = _m.multiply(_m.add(_m.cast(_a.range(0, out), _dt.float64), u), alpha)
        starts = _m.subtract(_m.ceil(steps), _m.ceil(_m.multiply(u, alpha)))
        return _a.concat([_m.cast(starts, _dt.int64), convert_to_tensor(np.asarray([size], np.int64))], 0)
    # size % out regions one longer, at places a random permutation picks
    keys = draw("random_uniform", seed, [out], _dt.float64)
    longer = _m.less(argsort(argsort(keys)), size % out)
    diffs = _m.add(_m.cast(longer, _dt.int64), size // out)
    return _a.concat([_a.zeros([1], _dt.int64), _m.cumsum(diffs)], 0)


def _regions(bounds: Tensor, size: int, out: int, overlapping: bool, longest: int
             ) -> tuple[Tensor, Tensor]:
    """Row indices [out, longest] of each region (the last one repeated past its end) and a
    float mask of the real ones."""
    starts, ends = bounds[:-1], bounds[1:]
    if overlapping:
        ends = _m.minimum(_m.add(ends, 1), size)
    offsets = _m.add(_a.expand_dims(starts, 1), convert_to_tensor(np.arange(longest, dtype=np.int64)))
    last = _a.expand_dims(_m.subtract(ends, 1), 1)
    return _m.minimum(offsets, last), _m.less(offsets, _a.expand_dims(ends, 1))


def _pool(value: Any, pooling_ratio: Any, pseudo_random: bool, overlapping: bool, seed: int,
          what: str, mean: bool) -> tuple[Tensor, Tensor, Tensor]:
    x = convert_to_tensor(value)
    dims = x.shape.as_list()
    if len(dims) != 4 or None in dims[1:3]:
        raise ValueError(f"{what}: value must be 4-D [batch, height, width, channels] with known "
                         f"height and width, got shape {x.shape}.")
    if mean and not x.dtype.is_floating:
        raise TypeError(f"{what}: value must be a float tensor, got {x.dtype.name}.")
    out = []
    for axis, (size, ratio) in enumerate(zip(dims[1:3], _ratios(pooling_ratio, what))):
        n = int(math.floor(size / ratio))
        if n < 1:
            raise ValueError(f"{what}: pooling_ratio {ratio} leaves no output along a dimension "
                             f"of size {size}.")
        bounds = _sequence(size, n, pseudo_random, seed_tensor(None if seed == 0 else seed))
        longest = -(-size // n) + 1 + int(overlapping)
        out.append((axis + 1, bounds, *_regions(bounds, size, n, overlapping, longest)))
    y = x
    for axis, _, index, real in out:
        parts = _a.gather(y, index, axis=axis)           # [.., out, longest, ..]
        if mean:
            w = _m.cast(real, x.dtype)
            w = _a.reshape(w, w.shape.as_list() + [1] * (3 - axis))
            y = _m.divide(_m.reduce_sum(_m.multiply(parts, w), axis=axis + 1),
                          _m.reduce_sum(w, axis=1))
        else:
            y = _m.reduce_max(parts, axis=axis + 1)   # repeated rows do not change a maximum
    return y, out[0][1], out[1][1]


def fractional_max_pool(value: Any, pooling_ratio: Any, pseudo_random: bool = False,
                        overlapping: bool = False, seed: int = 0,
                        name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Max pooling of ``value`` [N, H, W, C] over regions that shrink rows and columns by the
    non-integer ``pooling_ratio`` ([1.0, rows, cols, 1.0]); returns the output
    [N, floor(H / rows), floor(W / cols), C] and the row and column boundary sequences
    (int64, first 0, last H or W).

    >>> import stagecraft as tf
    >>> y, rows, cols = tf.nn.fractional_max_pool(tf.ones([1, 5, 5, 1]), [1.0, 1.5, 1.5, 1.0],
    ...                                           seed=1)
    >>> y.shape, int(rows[0]), int(rows[-1])
    (TensorShape([1, 3, 3, 1]), 0, 5)
    """
    return _pool(value, pooling_ratio, pseudo_random, overlapping, seed,
                 "tf.nn.fractional_max_pool", mean=False)


def fractional_avg_pool(value: Any, pooling_ratio: Any, pseudo_random: bool = False,
                        overlapping: bool = False, seed: int = 0,
                        name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``fractional_max_pool`` with the mean of each region instead of its maximum.

    >>> import stagecraft as tf
    >>> y, _, _ = tf.nn.fractional_avg_pool(tf.ones([1, 4, 6, 2]), [1.0, 1.4, 1.9, 1.0],
    ...                                     seed=1)
    >>> y.shape, float(tf.reduce_max(tf.abs(y - 1.0)))
    (TensorShape([1, 2, 3, 2]), 0.0)
    """
    return _pool(value, pooling_ratio, pseudo_random, overlapping, seed,
                 "tf.nn.fractional_avg_pool", mean=True)
