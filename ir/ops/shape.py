"""Shape and layout primitives: reshape, transpose, concat, broadcasting, gather, one_hot,
squeeze/expand_dims, tile and strided slicing (plus the gradient helpers some of them need)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import (check_dtype, check_unified, fail, normalize_axis,
                                     num_elements)
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

A, INTS = dt.ALL, dt.INTS


def shape_op_def(name, inputs, attrs, infer, kernel, examples, doc, unify=(0,), dtypes=A,
                 **extra) -> OpDef:
    return OpDef(name=name, kind=Kind.SHAPE, inputs=inputs, attrs=attrs, infer=infer,
                 kernel=kernel, dtypes=dtypes, unify=unify, examples=examples, doc=doc, **extra)


# ----------------------------------------------------------------------------- reshape

def resolve_reshape(op: str, in_shape, target) -> tuple:
    """The output dims of a reshape, resolving one -1; raises when sizes cannot match."""
    target = tuple(int(d) for d in target)
    if sum(d == -1 for d in target) > 1:
        raise fail(op, f"only one dimension may be -1, got shape {list(target)}.")
    if any(d < -1 for d in target):
        raise fail(op, f"dimensions must be >= -1, got shape {list(target)}.")
    total = num_elements(in_shape)
    known = 1
    for d in target:
        if d != -1:
            known *= d
    if total is None:
        return tuple(None if d == -1 else d for d in target)
    if -1 in target:
        if known == 0 or total % known:
            raise fail(op, f"Input to reshape is a tensor with {total} values, but the requested "
                           f"shape {list(target)} cannot hold them (not a multiple of {known}).")
        return tuple(total // known if d == -1 else d for d in target)
    if known != total:
        raise fail(op, f"Input to reshape is a tensor with {total} values, but the requested "
                       f"shape {list(target)} has {known}.")
    return target


reshape_op = shape_op_def(
    "reshape", ("tensor",), ("shape",),
    lambda types, shape: [TensorType(types[0].dtype,
                                     resolve_reshape("reshape", types[0].shape, shape))],
    lambda x, shape: np.reshape(x, shape),
    lambda rng, d: [Example((values(rng, d, (3, 4)),), {"shape": s})
                    for s in [(12,), (2, -1), (4, 3, 1), (-1, 2, 2)]],
    "Same values in a new shape; one dimension may be -1 (inferred).")


def _reshape_like_infer(types):
    if types[1].shape is not None:
        resolve_reshape("reshape", types[0].shape, [-1 if d is None else d for d in types[1].shape]
                        if types[1].shape.count(None) <= 1 else [])  # checks sizes when known
    return [TensorType(types[0].dtype, types[1].shape)]


reshape_like_op = shape_op_def(
    "reshape_like", ("tensor", "like"), (), _reshape_like_infer,
    lambda x, like: np.reshape(x, np.shape(like)),
    lambda rng, d: [Example((values(rng, d, (3, 4)), values(rng, d, (2, 6))))],
    "Reshapes `tensor` to the shape of `like` (whose values are not read); used by gradients.")


# ------------------------------------------------------- shapes given as run-time tensors
#
# Each op that takes a shape as an attribute has a ``*_dynamic`` twin taking it as a 1-D int
# tensor input (a shape known only when the function runs, e.g. ``[tf.shape(x)[0], 8]``). Its
# ``static`` attribute holds what is known when tracing: one entry per dimension, an int or
# None (unknown); ``static=None`` when even the length of the shape is unknown. Inference
# returns those dims; the kernels check that the run-time shape agrees with them.

def check_shape_input(op: str, name: str, t: TensorType, static) -> None:
    """Checks the shape tensor input ``t`` of a ``*_dynamic`` op against its ``static``
    attribute (a tuple of ints and Nones, or None)."""
    check_dtype(op, name, t, INTS)
    if t.rank not in (1, None):
        raise fail(op, f"'{name}' must be a 1-D int tensor (one entry per dimension), got "
                       f"shape {format_dims(t.shape)}.")
    if static is not None and t.shape is not None and t.shape[0] is not None \
            and t.shape[0] != len(static):
        raise fail(op, f"'{name}' has {t.shape[0]} entries but the static attribute names "
                       f"{len(static)} dimensions.")


def runtime_dims(op: str, name: str, shape: np.ndarray, static, minus_one: bool = False) -> tuple:
    """The run-time shape values of a ``*_dynamic`` op as ints, checked against ``static``
    (the dims known when tracing) and for negative entries (-1 allowed when ``minus_one``)."""
    shape = np.asarray(shape)
    if shape.ndim != 1:
        raise ValueError(f"{op}: '{name}' must be a 1-D int tensor, got shape {list(shape.shape)}.")
    dims = tuple(int(d) for d in shape)
    if static is not None:
        if len(dims) != len(static):
            raise ValueError(f"{op}: '{name}' has {len(dims)} entries when the function runs but "
                             f"{len(static)} when it was traced.")
        for i, (d, s) in enumerate(zip(dims, static)):
            if s is not None and d != s:
                raise ValueError(f"{op}: dimension {i} of '{name}' is {d} when the function runs "
                                 f"but was {s} when it was traced.")
    low = -1 if minus_one else 0
    bad = [d for d in dims if d < low]
    if bad:
        raise ValueError(f"{op}: dimensions must be {'>= -1' if minus_one else 'non-negative'}, "
                         f"got {name} {list(dims)}.")
    return dims


def _reshape_dynamic_infer(types, static):
    check_shape_input("reshape_dynamic", "shape", types[1], static)
    if static is None:
        return [TensorType(types[0].dtype, None)]
    if sum(d == -1 for d in static) > 1:
        raise fail("reshape_dynamic", f"only one dimension may be -1, got shape "
                                      f"{format_dims(static)}.")
    if any(d is not None and d < -1 for d in static):
        raise fail("reshape_dynamic", f"dimensions must be >= -1, got shape "
                                      f"{format_dims(static)}.")
    total = num_elements(types[0].shape)
    known = [d for d in static if d is not None and d != -1]
    out = list(static)
    if -1 in static and total is not None and len(known) == len(static) - 1:
        out = list(resolve_reshape("reshape", types[0].shape, static))
    elif None not in static and -1 not in static and total is not None:
        resolve_reshape("reshape", types[0].shape, static)  # the sizes must match
    return [TensorType(types[0].dtype, tuple(None if d == -1 else d for d in out))]


def _reshape_dynamic_kernel(x, shape, static):
    dims = runtime_dims("reshape", "shape", shape, static, minus_one=True)
    return np.reshape(x, resolve_reshape("reshape", np.shape(x), dims))


reshape_dynamic_op = shape_op_def(
    "reshape_dynamic", ("tensor", "shape"), ("static",), _reshape_dynamic_infer,
    _reshape_dynamic_kernel,
    lambda rng, d: [Example((values(rng, d, (3, 4)), np.array(s, np.int32)), {"static": st})
                    for s, st in [((2, 6), (None, 6)), ((4, -1), (None, -1)),
                                  ((2, -1, 3), (2, None, 3))]],
    "`reshape` with the shape as a 1-D int tensor (known when the function runs); `static` "
    "holds the dims known when tracing (None where unknown, -1 where given as -1).",
    unify=(0,))


def _broadcast_to_dynamic_infer(types, static):
    check_shape_input("broadcast_to_dynamic", "shape", types[1], static)
    if static is not None:
        check_broadcast_to("broadcast_to", types[0].shape, tuple(static))
    return [TensorType(types[0].dtype, None if static is None else tuple(static))]


def _broadcast_to_dynamic_kernel(x, shape, static):
    dims = runtime_dims("broadcast_to", "shape", shape, static)
    check_broadcast_to("broadcast_to", np.shape(x), dims)
    return np.broadcast_to(x, dims)


broadcast_to_dynamic_op = shape_op_def(
    "broadcast_to_dynamic", ("input", "shape"), ("static",), _broadcast_to_dynamic_infer,
    _broadcast_to_dynamic_kernel,
    lambda rng, d: [Example((values(rng, d, (3, 1)), np.array((2, 3, 4), np.int64)),
                            {"static": (None, 3, None)}),
                    Example((values(rng, d, ()), np.array((3,), np.int32)), {"static": (None,)})],
    "`broadcast_to` with the shape as a 1-D int tensor; `static` holds the dims known when "
    "tracing.", unify=(0,))


def _tile_dynamic_infer(types, static):
    check_shape_input("tile_dynamic", "multiples", types[1], static)
    shape = types[0].shape
    if static is None:
        return [TensorType(types[0].dtype, None if shape is None else (None,) * len(shape))]
    return _tile_infer([types[0]], tuple(-2 if m is None else m for m in static), unknown=-2)


def _tile_dynamic_kernel(x, multiples, static):
    m = runtime_dims("tile", "multiples", multiples, static)
    if len(m) != np.ndim(x):
        raise ValueError(f"tile: multiples has {len(m)} entries but the input has rank "
                         f"{np.ndim(x)}; give one multiple per dimension.")
    return np.tile(x, m)


tile_dynamic_op = shape_op_def(
    "tile_dynamic", ("input", "multiples"), ("static",), _tile_dynamic_infer,
    _tile_dynamic_kernel,
    lambda rng, d: [Example((values(rng, d, (2, 3)), np.array((2, 1), np.int32)),
                            {"static": (None, 1)}),
                    Example((values(rng, d, (3,)), np.array((3,), np.int64)), {"static": (None,)})],
    "`tile` with the multiples as a 1-D int tensor; `static` holds those known when tracing.",
    unify=(0,))


# --------------------------------------------------------------------------- transpose

def _transpose_infer(types, perm):
    rank = types[0].rank
    if rank is not None:
        if sorted(perm) != list(range(rank)):
            raise fail("transpose", f"perm {list(perm)} is not a permutation of "
                                    f"[0, ..., {rank - 1}] for a tensor of rank {rank}.")
        shape = tuple(types[0].shape[p] for p in perm)
    else:
        shape = (None,) * len(perm)
    return [TensorType(types[0].dtype, shape)]


transpose_op = shape_op_def(
    "transpose", ("a",), ("perm",), _transpose_infer, lambda x, perm: np.transpose(x, perm),
    lambda rng, d: [Example((values(rng, d, (3, 4)),), {"perm": (1, 0)}),
                    Example((values(rng, d, (2, 3, 4)),), {"perm": (2, 0, 1)})],
    "Permutes dimensions: output dim i is input dim perm[i].")


# ------------------------------------------------------------------------------ concat

def _concat_infer(types, axis):
    d = check_unified("concat", ("values",), types, tuple(range(len(types))), A)
    ranks = {t.rank for t in types if t.rank is not None}
    if not ranks:
        return [TensorType(d, None)]
    if len(ranks) > 1:
        raise fail("concat", f"all inputs must have the same rank, got shapes "
                             f"{', '.join(format_dims(t.shape) for t in types)}.")
    rank = ranks.pop()
    if rank == 0:
        raise fail("concat", "cannot concatenate scalars; use tf.stack instead.")
    a = normalize_axis("concat", axis, rank)
    out = []
    for i in range(rank):
        dims = [t.shape[i] for t in types if t.shape is not None]
        if i == a:
            out.append(None if None in dims else sum(dims))
            continue
        known = {x for x in dims if x is not None}
        if len(known) > 1:
            raise fail("concat", f"Dimension {i} in all shapes must be equal (except the concat "
                                 f"axis {a}), got shapes "
                                 f"{', '.join(format_dims(t.shape) for t in types)}.")
        out.append(known.pop() if known else None)
    return [TensorType(d, tuple(out))]


concat_op = shape_op_def(
    "concat", ("values",), ("axis",), _concat_infer,
    lambda *xs, axis: np.concatenate(xs, axis=axis),
    lambda rng, d: [Example((values(rng, d, (2, 3)), values(rng, d, (1, 3))), {"axis": 0}),
                    Example((values(rng, d, (2, 3)), values(rng, d, (2, 1)),
                             values(rng, d, (2, 2))), {"axis": -1})],
    "Joins tensors along an existing axis.", unify="all", variadic=True)


# ------------------------------------------------------------------------ broadcasting

def check_broadcast_to(op: str, src, dst) -> None:
    if src is None or dst is None:
        return
    if len(src) > len(dst):
        raise fail(op, f"cannot broadcast a tensor of shape {format_dims(src)} to the lower-rank "
                       f"shape {format_dims(dst)}.")
    for s, t in zip(src[::-1], dst[::-1]):
        if s not in (1, None) and t is not None and s != t:
            raise fail(op, f"cannot broadcast shape {format_dims(src)} to {format_dims(dst)}: "
                           f"dimension {s} is neither 1 nor {t}.")


def _broadcast_to_infer(types, shape):
    check_broadcast_to("broadcast_to", types[0].shape, tuple(shape))
    return [TensorType(types[0].dtype, tuple(shape))]


broadcast_to_op = shape_op_def(
    "broadcast_to", ("input",), ("shape",), _broadcast_to_infer,
    lambda x, shape: np.broadcast_to(x, shape),
    lambda rng, d: [Example((values(rng, d, (3, 1)),), {"shape": (2, 3, 4)}),
                    Example((values(rng, d, ()),), {"shape": (3,)})],
    "Repeats the input along broadcast dimensions to the given shape.")


def _broadcast_like_infer(types):
    check_broadcast_to("broadcast_like", types[0].shape, types[1].shape)
    return [TensorType(types[0].dtype, types[1].shape)]


broadcast_like_op = shape_op_def(
    "broadcast_like", ("input", "like"), (), _broadcast_like_infer,
    lambda x, like: np.broadcast_to(x, np.shape(like)),
    lambda rng, d: [Example((values(rng, d, (3, 1)), values(rng, d, (2, 3, 4))))],
    "Broadcasts `input` to the shape of `like` (whose values are not read); used by gradients.",
    dtypes=A)


def sum_to_shape(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Sums a broadcast result back down to ``shape`` (the adjoint of broadcasting)."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    out = np.sum(x, axis=axes, keepdims=True, dtype=x.dtype) if axes else x
    return np.reshape(out, shape)


def _sum_like_infer(types):
    check_dtype("sum_like", "input", types[0], dt.NUMERIC + dt.COMPLEX)
    check_broadcast_to("sum_like", types[1].shape, types[0].shape)
    return [TensorType(types[0].dtype, types[1].shape)]


sum_like_op = shape_op_def(
    "sum_like", ("input", "like"), (), _sum_like_infer,
    lambda x, like: sum_to_shape(x, np.shape(like)),
    lambda rng, d: [Example((values(rng, d, (2, 3, 4)), values(rng, d, (3, 1)))),
                    Example((values(rng, d, (3,)), values(rng, d, ())))],
    "Sums `input` down to the shape of `like` (the adjoint of broadcasting); used by gradients.",
    dtypes=dt.NUMERIC + dt.COMPLEX)


# ------------------------------------------------------------------------------ gather

def _gather_shape(op, params, indices, axis, batch_dims):
    if params.shape is None or indices.shape is None:
        return None, axis
    if batch_dims < 0:
        batch_dims += indices.rank
    a = normalize_axis(op, axis, params.rank)
    if not 0 <= batch_dims <= min(a, indices.rank):
        raise fail(op, f"batch_dims={batch_dims} must be in [0, min(axis={a}, "
                       f"rank(indices)={indices.rank})].")
    return params.shape[:a] + indices.shape[batch_dims:] + params.shape[a + 1:], a


def _gather_infer(types, axis, batch_dims):
    check_dtype("gather", "indices", types[1], INTS)
    shape, _ = _gather_shape("gather", types[0], types[1], axis, batch_dims)
    return [TensorType(types[0].dtype, shape)]


def _check_indices(indices: np.ndarray, n: int) -> None:
    bad = (indices < 0) | (indices >= n)
    if np.any(bad):
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise IndexError(f"indices{list(pos)} = {int(indices[pos])} is not in [0, {n}). "
                         f"Indices must be valid positions; negative indices are not allowed.")


def _gather_kernel(params, indices, axis, batch_dims):
    if batch_dims < 0:
        batch_dims += indices.ndim
    axis = axis % params.ndim
    _check_indices(indices, params.shape[axis])

    return _gather_batched(params, indices, axis, batch_dims)


def _gather_batched(params, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([_gather_batched(params[i], indices[i], axis - 1, batch_dims - 1)
                     for i in range(params.shape[0])])


def _gather_examples(rng, d):
    p = values(rng, d, (4, 3))
    return [Example((p, np.array([2, 0, 2], np.int32)), {"axis": 0, "batch_dims": 0}),
            Example((p, np.array([[1], [2]], np.int64)), {"axis": 1, "batch_dims": 0}),
            Example((p, np.array([[0, 2], [1, 1], [2, 0], [0, 0]], np.int32)),
                    {"axis": 1, "batch_dims": 1})]


gather_op = shape_op_def(
    "gather", ("params", "indices"), ("axis", "batch_dims"), _gather_infer, _gather_kernel,
    _gather_examples,
    "Picks slices of `params` along `axis` at `indices`; out-of-range indices raise.",
    copying=True)


# -------------------------------------------------------------------------- row_update

def _row_update_infer(types):
    buf, index, value = types
    check_dtype("row_update", "index", index, INTS)
    check_unified("row_update", ("buffer", "index", "value"), types, (0, 2), A)
    if index.rank not in (0, None):
        raise fail("row_update", f"index must be a scalar, got shape {format_dims(index.shape)}.")
    if buf.rank == 0:
        raise fail("row_update", "buffer must have rank >= 1 (rows along its first axis).")
    if buf.shape is not None and value.shape is not None:
        row = buf.shape[1:]
        if len(row) != len(value.shape) or any(
                a is not None and b is not None and a != b for a, b in zip(row, value.shape)):
            raise fail("row_update", f"value of shape {format_dims(value.shape)} does not fit a "
                                     f"row of a buffer of shape {format_dims(buf.shape)}.")
    return [buf]


def _row_update_kernel(buffer, index, value):
    i, n = int(index), buffer.shape[0]
    if not 0 <= i < n:
        raise IndexError(f"row_update: index {i} is not in [0, {n}); a fixed-size TensorArray "
                         f"cannot grow (pass dynamic_size=True).")
    out = np.array(buffer, copy=True)
    out[i] = value
    return out


def _row_update_examples(rng, d):
    return [Example((values(rng, d, (4, 3)), np.array(2, np.int32), values(rng, d, (3,)))),
            Example((values(rng, d, (5,)), np.array(0, np.int64), values(rng, d, ())))]


row_update_op = shape_op_def(
    "row_update", ("buffer", "index", "value"), (), _row_update_infer, _row_update_kernel,
    _row_update_examples,
    "`buffer` with row `index` (along the first axis) replaced by `value`: a staged "
    "TensorArray write. An index outside [0, len(buffer)) raises.", unify=(0, 2))


def _gather_grad_kernel(g, indices, like, axis, batch_dims):
    if batch_dims < 0:
        batch_dims += indices.ndim
    axis = axis % like.ndim
    out = np.zeros(np.shape(like), g.dtype)
    _scatter_add(out, g, indices, axis, batch_dims)
    return out


def _scatter_add(out, g, indices, axis, batch_dims):
    if batch_dims:
        for i in range(out.shape[0]):
            _scatter_add(out[i], g[i], indices[i], axis - 1, batch_dims - 1)
        return
    moved = np.moveaxis(out, axis, 0)  # a view: writes land in `out`
    gm = np.reshape(np.moveaxis(np.reshape(g, out.shape[:axis] + (indices.size,)
                                           + out.shape[axis + 1:]), axis, 0),
                    (indices.size,) + moved.shape[1:])
    np.add.at(moved, indices.reshape(-1), gm)


def _gather_grad_infer(types, axis, batch_dims):
    check_dtype("gather_grad", "grad", types[0], dt.NUMERIC + dt.COMPLEX)
    check_dtype("gather_grad", "indices", types[1], INTS)
    return [TensorType(types[0].dtype, types[2].shape)]


gather_grad_op = shape_op_def(
    "gather_grad", ("grad", "indices", "like"), ("axis", "batch_dims"), _gather_grad_infer,
    _gather_grad_kernel,
    lambda rng, d: [Example((values(rng, d, (3, 3)), np.array([2, 0, 2], np.int32),
                             values(rng, d, (4, 3))), {"axis": 0, "batch_dims": 0}),
                    Example((values(rng, d, (4, 2)), np.array([[0, 2], [1, 1], [2, 0], [0, 0]],
                                                              np.int32),
                             values(rng, d, (4, 3))), {"axis": 1, "batch_dims": 1})],
    "Adds `grad` into zeros shaped like `like` at the positions a gather read (its adjoint).",
    dtypes=dt.NUMERIC + dt.COMPLEX)


# ----------------------------------------------------------------------------- one_hot

def _one_hot_infer(types, depth, axis):
    check_dtype("one_hot", "indices", types[0], INTS)
    d = check_unified("one_hot", ("indices", "on_value", "off_value"), types, (1, 2), A)
    for t, n in ((types[1], "on_value"), (types[2], "off_value")):
        if t.rank not in (0, None):
            raise fail("one_hot", f"'{n}' must be a scalar, got shape {format_dims(t.shape)}.")
    if depth < 0:
        raise fail("one_hot", f"depth must be non-negative, got {depth}.")
    shape = types[0].shape
    if shape is None:
        return [TensorType(d, None)]
    a = len(shape) if axis == -1 else normalize_axis("one_hot", axis, len(shape), extra=1)
    return [TensorType(d, shape[:a] + (depth,) + shape[a:])]


def _one_hot_kernel(indices, on_value, off_value, depth, axis):
    hot = np.expand_dims(indices, -1) == np.arange(depth)
    out = np.where(hot, on_value, off_value).astype(np.asarray(on_value).dtype)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


one_hot_op = shape_op_def(
    "one_hot", ("indices", "on_value", "off_value"), ("depth", "axis"), _one_hot_infer,
    _one_hot_kernel,
    lambda rng, d: [Example((np.array([0, 2, -1, 5], np.int32), values(rng, d, ()),
                             values(rng, d, ())), {"depth": 3, "axis": -1}),
                    Example((np.array([[1], [0]], np.int64), values(rng, d, ()),
                             values(rng, d, ())), {"depth": 2, "axis": 0})],
    "One-hot encoding: `on_value` where index == position along `axis`, else `off_value`; "
    "out-of-range indices give a row of `off_value`.", unify=(1, 2))


# -------------------------------------------------------------- squeeze / expand / tile

def _squeeze_infer(types, axis):
    shape = types[0].shape
    if shape is None:
        return [TensorType(types[0].dtype, None)]
    if axis is None:
        if None in shape:
            return [TensorType(types[0].dtype, None)]
        return [TensorType(types[0].dtype, tuple(d for d in shape if d != 1))]
    axes = {normalize_axis("squeeze", a, len(shape)) for a in axis}
    for a in sorted(axes):
        if shape[a] not in (1, None):
            raise fail("squeeze", f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                                  f"{shape[a]} (shape {format_dims(shape)}).")
    return [TensorType(types[0].dtype, tuple(d for i, d in enumerate(shape) if i not in axes))]


squeeze_op = shape_op_def(
    "squeeze", ("input",), ("axis",), _squeeze_infer,
    lambda x, axis: np.squeeze(x, axis=None if axis is None else tuple(axis)),
    lambda rng, d: [Example((values(rng, d, (1, 3, 1)),), {"axis": None}),
                    Example((values(rng, d, (1, 3, 1)),), {"axis": (-1,)})],
    "Removes size-1 dimensions (all of them, or those in `axis`).")


def _expand_dims_infer(types, axis):
    shape = types[0].shape
    if shape is None:
        return [TensorType(types[0].dtype, None)]
    a = normalize_axis("expand_dims", axis, len(shape), extra=1)
    return [TensorType(types[0].dtype, shape[:a] + (1,) + shape[a:])]


expand_dims_op = shape_op_def(
    "expand_dims", ("input",), ("axis",), _expand_dims_infer,
    lambda x, axis: np.expand_dims(x, axis),
    lambda rng, d: [Example((values(rng, d, (3, 4)),), {"axis": a}) for a in (0, 1, -1)],
    "Inserts a size-1 dimension at `axis` (in [-rank-1, rank]).")


def _tile_infer(types, multiples, unknown=None):
    """``unknown`` marks a multiple only known when the function runs (tile_dynamic)."""
    shape = types[0].shape
    if shape is not None and len(multiples) != len(shape):
        raise fail("tile", f"multiples has {len(multiples)} entries but the input has rank "
                           f"{len(shape)}; give one multiple per dimension.")
    if any(m < 0 and m != unknown for m in multiples):
        raise fail("tile", f"multiples must be non-negative, got {list(multiples)}.")
    if shape is None:
        return [TensorType(types[0].dtype, None)]
    return [TensorType(types[0].dtype,
                       tuple(None if d is None or m == unknown else d * m
                             for d, m in zip(shape, multiples)))]


tile_op = shape_op_def(
    "tile", ("input",), ("multiples",), _tile_infer, lambda x, multiples: np.tile(x, multiples),
    lambda rng, d: [Example((values(rng, d, (2, 3)),), {"multiples": (2, 1)}),
                    Example((values(rng, d, (3,)),), {"multiples": (3,)})],
    "Repeats the input `multiples[i]` times along dimension i.")
