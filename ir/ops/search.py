"""Searching: ``unique_index`` (each element's place among the distinct values, the primitive
under ``tf.unique``) and ``searchsorted`` (binary search in sorted rows)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.ops.segment import DTYPES
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

def _unique_infer(types, out_type):
    check_dtype("unique_index", "x", types[0], DTYPES)
    if types[0].rank not in (1, None):
        raise fail("unique_index", f"x must be a vector (unique), got shape "
                                   f"{format_dims(types[0].shape)}.")
    if out_type not in dt.INTS:
        raise fail("unique_index", f"out_idx must be int32 or int64, got {out_type.name}.")
    return [TensorType(out_type, types[0].shape)]


def unique_positions(x: np.ndarray) -> np.ndarray:
    """For each element, the number of distinct values that occur first before it (its
    value's place among the distinct values in order of first occurrence); NaNs never equal
    each other, as in TensorFlow's hash-map ``unique``."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"unique expects a 1D vector, got shape {list(x.shape)}.")
    if x.size == 0:
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True, equal_nan=False)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


unique_index_op = OpDef(
    name="unique_index", kind=Kind.REDUCE, inputs=("x",), attrs=("out_type",),
    infer=_unique_infer, kernel=lambda x, out_type: unique_positions(x).astype(out_type.np),
    dtypes=DTYPES, unify=(0,),
    examples=lambda rng, d: [Example((np.round(values(rng, d, (n,), -2, 2)).astype(d.np),),
                                     {"out_type": o})
                             for n, o in [(7, dt.int32), (0, dt.int64), (5, dt.int64)]],
    doc="For each element of the vector `x`, the position of its value among the distinct "
        "values in order of first occurrence (tf.unique's `idx`).")


# --------------------------------------------------------------------------- searchsorted

SIDES = ("left", "right")


def _search_infer(types, side, out_type):
    op = "searchsorted"
    check_unified(op, ("sorted_sequence", "values"), types, (0, 1), DTYPES)
    if side not in SIDES:
        raise fail(op, f"side must be 'left' or 'right', got {side!r}.")
    if out_type not in dt.INTS:
        raise fail(op, f"out_type must be int32 or int64, got {out_type.name}.")
    seq, vals = types
    if seq.shape is None or vals.shape is None:
        return [TensorType(out_type, vals.shape)]
    if not seq.shape or not vals.shape:
        raise fail(op, f"sorted_sequence and values need at least one dimension, got shapes "
                       f"{format_dims(seq.shape)} and {format_dims(vals.shape)}.")
    if len(seq.shape) != len(vals.shape) or any(
            a is not None and b is not None and a != b for a, b in zip(seq.shape[:-1],
                                                                       vals.shape[:-1])):
        raise fail(op, f"Leading dim_size of both tensors must match: sorted_sequence has "
                       f"shape {format_dims(seq.shape)} and values {format_dims(vals.shape)}; "
                       f"all but the last dimension must be equal.")
    return [TensorType(out_type, vals.shape)]


def _search_kernel(sorted_sequence, values, side, out_type):
    seq, vals = np.asarray(sorted_sequence), np.asarray(values)
    if seq.shape[:-1] != vals.shape[:-1]:
        raise ValueError("Leading dim_size of both tensors must match.")
    n = seq.shape[-1]
    rows_s, rows_v = seq.reshape(-1, n), vals.reshape(-1, vals.shape[-1])
    out = np.empty(rows_v.shape, out_type.np)
    for r in range(rows_v.shape[0]):
        out[r] = np.searchsorted(rows_s[r], rows_v[r], side=side)
    return out.reshape(vals.shape)


def _search_examples(rng, d):
    def sorted_values(shape):
        return np.sort(np.round(values(rng, d, shape, -4, 4)), axis=-1).astype(d.np)
    return [Example((sorted_values(s), np.round(values(rng, d, v, -5, 5)).astype(d.np)),
                    {"side": side, "out_type": o})
            for s, v, o in [((6,), (4,), dt.int32), ((2, 5), (2, 3), dt.int64)]
            for side in SIDES]


searchsorted_op = OpDef(
    name="searchsorted", kind=Kind.REDUCE, inputs=("sorted_sequence", "values"),
    attrs=("side", "out_type"), infer=_search_infer, kernel=_search_kernel, dtypes=DTYPES,
    unify=(0, 1), examples=_search_examples,
    doc="For each of `values` (row by row: all but the last dimension match), the position in "
        "the sorted last axis of `sorted_sequence` where it would be inserted: before equal "
        "elements ('left') or after them ('right').")
