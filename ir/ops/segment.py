"""Segment reductions: ``segment_reduce`` combines the rows of ``data`` that share a segment id
(sum, product, max or min), the primitive under ``tf.math.segment_*``,
``tf.math.unsorted_segment_*``, ``tf.math.bincount`` and ``tf.unique``'s values and counts.

The number of segments is an input (a scalar), so it may be known only when the function runs
(``segment_sum``'s is the last id + 1): the result has a dynamic first dimension, known when
tracing only where the ``static`` attribute holds it. As in TensorFlow, a negative id drops its
row in the unsorted ops, an id at or beyond ``num_segments`` raises, and an empty segment holds
0 (sum), 1 (product), the dtype's lowest value (max) or highest value (min); the sorted ops
(``sorted=True``) raise for negative or decreasing ids and give 0 for an empty max or min.
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

REDUCTIONS = ("sum", "prod", "max", "min")
DTYPES = dt.INTEGERS + dt.FLOATS   # TensorFlow's real-number kernels (not bool)


def identity(mode: str, dtype: np.dtype):
    """The value of an empty segment in the unsorted ops (the reduction's identity; for max
    and min the dtype's lowest and highest finite values, as TensorFlow's
    ``numeric_limits<T>::lowest()/max()``)."""
    dtype = np.dtype(dtype)
    if dtype in (dt.float16.np, dt.bfloat16.np):  # computed in float32 (ir/ops/half.py), so
        dtype = np.dtype(np.float32)  # an empty max/min segment rounds to -inf/inf
    if mode in ("sum", "prod"):
        return dtype.type(mode == "prod")
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return dtype.type(info.min if mode == "max" else info.max)


def out_of_range(ids_shape, flat: int, value: int, num_segments: int) -> str:
    """TensorFlow's message for the id at flat position ``flat`` outside [0, num_segments)."""
    where = ",".join(str(int(i)) for i in np.unravel_index(flat, tuple(ids_shape))) \
        if len(ids_shape) else ""
    return f"segment_ids[{where}] = {value} is out of range [0, {num_segments})"


NEGATIVE_ID = "segment ids must be >= 0"
NOT_INCREASING = "segment ids are not increasing"


def _infer(types, mode, sorted, static):  # noqa: A002 (TensorFlow's meaning)
    op = "segment_reduce"
    if mode not in REDUCTIONS:
        raise fail(op, f"mode must be one of {REDUCTIONS}, got {mode!r}.")
    d = check_unified(op, ("data", "segment_ids", "num_segments"), types, (0,), DTYPES)
    data, ids, num = types
    check_dtype(op, "segment_ids", ids, dt.INTS)
    check_dtype(op, "num_segments", num, dt.INTS)
    if num.rank not in (0, None):
        raise fail(op, f"num_segments must be a scalar, got shape {format_dims(num.shape)}.")
    if len(static) != 1 or static[0] is not None and static[0] < 0:
        raise fail(op, f"num_segments must be non-negative, got {static[0]}.")
    if sorted and ids.rank not in (1, None):
        raise fail(op, f"segment_ids must be a vector (sorted segment ops), got shape "
                       f"{format_dims(ids.shape)}.")
    if data.shape is None or ids.shape is None:
        return [TensorType(d, None)]
    k = len(ids.shape)
    if len(data.shape) < k or any(a is not None and b is not None and a != b
                                  for a, b in zip(data.shape, ids.shape)):
        raise fail(op, f"data.shape = {format_dims(data.shape)} does not start with "
                       f"segment_ids.shape = {format_dims(ids.shape)}; each row of data needs "
                       f"one segment id.")
    return [TensorType(d, (static[0],) + tuple(data.shape[k:]))]


_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def check_ids(ids: np.ndarray, n: int, sorted: bool) -> None:  # noqa: A002
    """Raises TensorFlow's error for a bad id (see the module docstring)."""
    flat = ids.reshape(-1)
    if sorted:
        if flat.size and flat.min() < 0:
            raise ValueError(NEGATIVE_ID)
        if flat.size > 1 and np.any(flat[1:] < flat[:-1]):
            raise ValueError(NOT_INCREASING)
    bad = np.flatnonzero(flat >= n)
    if bad.size:
        raise ValueError(out_of_range(ids.shape, int(bad[0]), int(flat[bad[0]]), n))


def _kernel(data, segment_ids, num_segments, mode, sorted, static):  # noqa: A002
    data, ids = np.asarray(data), np.asarray(segment_ids)
    n = int(num_segments)
    if n < 0:
        raise ValueError(f"num_segments must be non-negative, got {n}.")
    if static[0] is not None and n != static[0]:
        raise ValueError(f"num_segments is {n} when the function runs but was {static[0]} "
                         f"when it was traced.")
    check_ids(ids, n, sorted)
    flat = ids.reshape(-1)
    rows = data.reshape((flat.size,) + data.shape[ids.ndim:])
    out = np.full((n,) + rows.shape[1:], identity(mode, data.dtype), data.dtype)
    keep = flat >= 0
    _UFUNC[mode].at(out, flat[keep], rows[keep])
    if sorted and mode in ("max", "min"):
        empty = np.bincount(flat, minlength=n) == 0
        out[empty] = 0
    return out


def _examples(rng, d):
    data = values(rng, d, (6, 2), -3, 3)
    unsorted_ids = np.array([2, 0, 2, -1, 0, 2], np.int32)
    covering_ids = np.array([2, 0, 1, -1, 0, 2], np.int32)
    sorted_ids = np.array([0, 0, 1, 3, 3, 3], np.int64)
    # segments 1 and 3 empty for sum and product; every segment filled for max and min, whose
    # empty value (the dtype's lowest or highest) would defeat finite differences
    out = [Example((data, unsorted_ids, np.int32(4)), {"mode": m, "sorted": False,
                                                     "static": (4,)}) for m in REDUCTIONS[:2]]
    out += [Example((data, covering_ids, np.int32(3)), {"mode": m, "sorted": False,
                                                      "static": (3,)}) for m in REDUCTIONS[2:]]
    out += [Example((data, sorted_ids, np.int64(4)), {"mode": m, "sorted": True,
                                                    "static": (None,)}) for m in ("sum", "max")]
    out.append(Example((values(rng, d, (2, 3), -3, 3), np.array([[1, 0, 1], [0, 0, 2]], np.int32),
                        np.int32(3)), {"mode": "min", "sorted": False, "static": (3,)}))
    return out


segment_reduce_op = OpDef(
    name="segment_reduce", kind=Kind.REDUCE, inputs=("data", "segment_ids", "num_segments"),
    attrs=("mode", "sorted", "static"), infer=_infer, kernel=_kernel, dtypes=DTYPES, unify=(0,),
    examples=_examples,
    doc="The rows of `data` (indexed by the leading dims that `segment_ids` covers) combined "
        "per segment id by `mode` (sum, prod, max, min) into `num_segments` rows; negative ids "
        "are dropped unless `sorted`, which requires ids >= 0 in increasing order.")
