"""Primitives that create tensors from attributes or scalars: fill (and fill_dynamic, whose
shape is a tensor), range, eye, shape, where (indices form)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.ops.shape import check_shape_input, runtime_dims
from stagecraft.ir.types import TensorType


def creation(name, inputs, attrs, infer, kernel, examples, doc, unify=(), dtypes=dt.ALL,
             value_free=False):
    return OpDef(name=name, kind=Kind.CREATION, inputs=inputs, attrs=attrs, infer=infer,
                 kernel=kernel, dtypes=dtypes, unify=unify, examples=examples, doc=doc,
                 value_free=value_free)


def _fill_infer(types, dims):
    if types[0].rank not in (0, None):
        raise fail("fill", "'value' must be a scalar.")
    if any(d < 0 for d in dims):
        raise fail("fill", f"dims must be non-negative, got {list(dims)}.")
    return [TensorType(types[0].dtype, tuple(dims))]


fill_op = creation(
    "fill", ("value",), ("dims",), _fill_infer,
    lambda value, dims: np.full(dims, value, dtype=np.asarray(value).dtype),
    lambda rng, d: [Example((values(rng, d, ()),), {"dims": s}) for s in [(), (3,), (2, 0, 3)]],
    "A tensor of shape `dims` filled with the scalar `value`.", unify=(0,))


def _fill_dynamic_infer(types, static):
    if types[0].rank not in (0, None):
        raise fail("fill", "'value' must be a scalar.")
    check_shape_input("fill_dynamic", "dims", types[1], static)
    if static is not None and any(d is not None and d < 0 for d in static):
        raise fail("fill", f"dims must be non-negative, got {list(static)}.")
    return [TensorType(types[0].dtype, None if static is None else tuple(static))]


def _fill_dynamic_kernel(value, dims, static):
    return np.full(runtime_dims("fill", "dims", dims, static), value,
                   dtype=np.asarray(value).dtype)


fill_dynamic_op = creation(
    "fill_dynamic", ("value", "dims"), ("static",), _fill_dynamic_infer, _fill_dynamic_kernel,
    lambda rng, d: [Example((values(rng, d, ()), np.array(s, np.int32)), {"static": st})
                    for s, st in [((3,), (None,)), ((2, 0, 3), (2, None, 3)),
                                  ((2, 4), (None, None))]],
    "`fill` with the shape as a 1-D int tensor (known when the function runs); `static` "
    "holds the dims known when tracing (None where unknown).", unify=(0,))


# TensorFlow's Range kernels: no uint8 or uint64.
_RANGE_DTYPES = tuple(d for d in dt.NUMERIC if d not in (dt.uint8, dt.uint64))


def _range_infer(types):
    d = check_unified("range", ("start", "limit", "delta"), types, (0, 1, 2), _RANGE_DTYPES)
    for t, n in zip(types, ("start", "limit", "delta")):
        if t.rank not in (0, None):
            raise fail("range", f"'{n}' must be a scalar.")
    return [TensorType(d, (None,))]


def _range_kernel(start, limit, delta):
    if delta == 0:
        raise ValueError("Requires delta != 0")
    return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)


range_op = creation(
    "range", ("start", "limit", "delta"), (), _range_infer, _range_kernel,
    lambda rng, d: [Example(tuple(np.asarray(v, d.np) for v in t))
                    for t in [(0, 5, 1), (1, 8, 3), (5, 0, -2)] if t[2] > 0 or not d.is_unsigned],
    "The sequence start, start + delta, ... up to but excluding limit.", unify=(0, 1, 2),
    dtypes=_RANGE_DTYPES)


def _eye_infer(types, num_rows, num_columns, dtype):
    if num_rows < 0 or num_columns < 0:
        raise fail("eye", "num_rows and num_columns must be non-negative.")
    return [TensorType(dtype, (num_rows, num_columns))]


eye_op = creation(
    "eye", (), ("num_rows", "num_columns", "dtype"), _eye_infer,
    lambda num_rows, num_columns, dtype: np.eye(num_rows, num_columns, dtype=dtype.np),
    lambda rng, d: [Example((), {"num_rows": 3, "num_columns": c, "dtype": d}) for c in (3, 4)],
    "The identity matrix (ones on the main diagonal).")


def _shape_infer(types, out_type):
    if out_type not in dt.INTS:
        raise fail("shape", f"out_type must be int32 or int64, got {out_type.name}.")
    return [TensorType(out_type, (types[0].rank,))]


shape_op = creation(
    "shape", ("input",), ("out_type",), _shape_infer,
    lambda x, out_type: np.array(np.shape(x), dtype=out_type.np),
    lambda rng, d: [Example((values(rng, d, s),), {"out_type": o})
                    for s in [(), (3, 4)] for o in dt.INTS],
    "The shape of the input as a 1-D integer tensor.", unify=(0,), value_free=True)


def _where_infer(types):
    check_dtype("where_indices", "condition", types[0], dt.ALL)
    return [TensorType(dt.int64, (None, types[0].rank))]


where_indices_op = creation(
    "where_indices", ("condition",), (), _where_infer,
    lambda c: np.argwhere(c).astype(np.int64),
    lambda rng, d: [Example((values(rng, d, s, -1, 1),)) for s in [(5,), (3, 4)]],
    "Coordinates of the true (non-zero) elements, one row per element, as int64.", unify=(0,))
