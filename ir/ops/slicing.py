"""Strided slicing (``x[1:, ::2, tf.newaxis, ..., i]``) and its adjoint.

The ``spec`` attribute is a tuple of items, each a plain tuple so it prints as a literal:
``("index", i)``, ``("slice", start, stop, step)``, ``("newaxis",)``, ``("ellipsis",)``.
A bound may be an int, None, or ``"$k"``: the k-th extra input (a scalar int tensor), which is
how indices computed at run time are passed.
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType


def _bound(v, dyn):
    if isinstance(v, str):
        return int(dyn[int(v[1:])])
    return v


def index_tuple(spec: tuple, dyn: tuple = ()) -> tuple:
    """The NumPy index for ``spec`` with dynamic bounds taken from ``dyn``."""
    out = []
    for item in spec:
        tag = item[0]
        if tag == "index":
            out.append(_bound(item[1], dyn))
        elif tag == "slice":
            out.append(slice(*(_bound(v, dyn) for v in item[1:])))
        elif tag == "newaxis":
            out.append(None)
        else:
            out.append(Ellipsis)
    return tuple(out)


def sliced_dims(op: str, shape, spec: tuple):
    """Output dims of ``x[spec]``; raises for out-of-range static indices and zero steps."""
    if shape is None:
        return None
    consumed = sum(1 for it in spec if it[0] in ("index", "slice"))
    if sum(1 for it in spec if it[0] == "ellipsis") > 1:
        raise fail(op, "an index can only have a single ellipsis ('...').")
    if consumed > len(shape):
        raise fail(op, f"too many indices ({consumed}) for a tensor of rank {len(shape)} "
                       f"(shape {format_dims(shape)}).")
    out, dim = [], 0
    for item in spec:
        tag = item[0]
        if tag == "newaxis":
            out.append(1)
        elif tag == "ellipsis":
            n = len(shape) - consumed
            out.extend(shape[dim:dim + n])
            dim += n
        elif tag == "index":
            size, i = shape[dim], item[1]
            if size is not None and not isinstance(i, str) and not -size <= i < size:
                raise fail(op, f"index {i} is out of bounds for dimension {dim} of size {size} "
                               f"(shape {format_dims(shape)}).")
            dim += 1
        else:
            start, stop, step = item[1:]
            if step == 0:
                raise fail(op, "slice step cannot be zero.")
            size = shape[dim]
            if size is None or any(isinstance(v, str) for v in item[1:]):
                out.append(None)
            else:
                out.append(len(range(*slice(start, stop, step).indices(size))))
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)


def _slice_infer(types, spec):
    for i, t in enumerate(types[1:]):
        check_dtype("strided_slice", f"index ${i}", t, dt.INTS)
    return [TensorType(types[0].dtype, sliced_dims("strided_slice", types[0].shape, spec))]


def _slice_kernel(x, *dyn, spec):
    idx = index_tuple(spec, dyn)
    try:
        return x[idx]
    except IndexError as e:
        raise IndexError(f"{e} (shape {list(np.shape(x))})") from None


def _slice_examples(rng, d):
    x = values(rng, d, (4, 5))
    specs = [(("index", 1),), (("slice", 1, 3, None),), (("slice", None, None, None), ("index", 1)),
             (("slice", 1, None, None), ("slice", None, None, 2)), (("index", -1), ("index", -2)),
             (("slice", None, None, -1), ("index", 0)), (("ellipsis",), ("newaxis",)),
             (("newaxis",), ("slice", None, None, 2), ("ellipsis",), ("index", 3))]
    out = [Example((x,), {"spec": s}) for s in specs]
    out.append(Example((x, np.int32(2)), {"spec": (("index", "$0"), ("slice", 1, None, None))}))
    return out


strided_slice_op = OpDef(
    name="strided_slice", kind=Kind.SHAPE, inputs=("input", "indices"), attrs=("spec",),
    infer=_slice_infer, kernel=_slice_kernel, dtypes=dt.ALL, unify=(0,),
    examples=_slice_examples, variadic=True, copying=True,
    doc="NumPy basic indexing: ints, slices with steps, newaxis and ellipsis.")


def _slice_grad_infer(types, spec):
    check_dtype("strided_slice_grad", "grad", types[0], dt.NUMERIC + dt.COMPLEX)
    for i, t in enumerate(types[2:]):
        check_dtype("strided_slice_grad", f"index ${i}", t, dt.INTS)
    return [TensorType(types[0].dtype, types[1].shape)]


def _slice_grad_kernel(g, like, *dyn, spec):
    out = np.zeros(np.shape(like), np.asarray(g).dtype)
    out[index_tuple(spec, dyn)] = g
    return out


def _slice_grad_examples(rng, d):
    like = values(rng, d, (4, 5))
    return [Example((values(rng, d, (2, 5)), like), {"spec": (("slice", 1, 3, None),)}),
            Example((values(rng, d, (3,)), like, np.int32(1)),
                    {"spec": (("index", "$0"), ("slice", None, None, 2))})]


strided_slice_grad_op = OpDef(
    name="strided_slice_grad", kind=Kind.SHAPE, inputs=("grad", "like", "indices"),
    attrs=("spec",), infer=_slice_grad_infer, kernel=_slice_grad_kernel,
    dtypes=dt.NUMERIC + dt.COMPLEX,
    unify=(0,), examples=_slice_grad_examples, variadic=True,
    doc="Writes `grad` into zeros shaped like `like` at the sliced positions (the adjoint of "
        "strided_slice).")


# ----------------------------------------------------------------- updates of a sliced l-value

def update_shape_error(want, got) -> str:
    return (f"sliced l-value shape {format_dims(want)} does not match r-value shape "
            f"{format_dims(got)}. Automatic broadcasting not yet implemented.")


def _dims_match(want, got) -> bool:
    return len(want) == len(got) and all(a is None or b is None or a == b
                                         for a, b in zip(want, got))


def _slice_update_infer(types, spec):
    check_unified("strided_slice_update", ("input", "value"), types, (0, 1), dt.ALL)
    for i, t in enumerate(types[2:]):
        check_dtype("strided_slice_update", f"index ${i}", t, dt.INTS)
    want = sliced_dims("strided_slice_update", types[0].shape, spec)
    got = types[1].shape
    if want is not None and got is not None and not _dims_match(want, got):
        raise fail("strided_slice_update", update_shape_error(want, got))
    return [TensorType(types[0].dtype, types[0].shape)]


def _slice_update_kernel(x, value, *dyn, spec):
    out = np.array(x, copy=True)
    idx = index_tuple(spec, dyn)
    want = np.shape(_slice_kernel(out, *dyn, spec=spec))
    if want != np.shape(value):  # TensorFlow never broadcasts the r-value
        raise ValueError(update_shape_error(want, np.shape(value)))
    out[idx] = value
    return out


def _slice_update_examples(rng, d):
    x = values(rng, d, (4, 5))
    return [Example((x, values(rng, d, (2, 5))), {"spec": (("slice", 1, 3, None),)}),
            Example((x, values(rng, d, ())), {"spec": (("index", -1), ("index", 2))}),
            Example((x, values(rng, d, (4,)), np.int32(1)),
                    {"spec": (("slice", None, None, -1), ("index", "$0"))})]


strided_slice_update_op = OpDef(
    name="strided_slice_update", kind=Kind.SHAPE, inputs=("input", "value", "indices"),
    attrs=("spec",), infer=_slice_update_infer, kernel=_slice_update_kernel, dtypes=dt.ALL,
    unify=(0, 1), examples=_slice_update_examples, variadic=True,
    doc="`input` with `input[spec]` replaced by `value`, whose shape must be the slice's "
        "(TensorFlow's TensorStridedSliceUpdate; `v[1:3].assign(x)` on a variable).")


# ------------------------------------------------------------------------------ scatter_nd

SCATTER_MODES = ("update", "add", "sub")


def scatter_index_error(indices_shape, bad: int, index, shape) -> str:
    """TensorFlow's message for row ``bad`` (flat) of ``indices`` outside ``shape``."""
    lead = tuple(indices_shape[:-1])
    where = "" if not lead else "[" + ",".join(str(int(i)) for i in np.unravel_index(bad, lead)) + "]"
    return (f"indices{where} = [{', '.join(str(int(i)) for i in index)}] does not index into "
            f"shape {format_dims(tuple(shape))}")


def _scatter_infer(types, mode):
    op = "scatter_nd"
    if mode not in SCATTER_MODES:
        raise fail(op, f"mode must be one of {SCATTER_MODES}, got {mode!r}.")
    check_unified(op, ("input", "indices", "updates"), types, (0, 2),
                  dt.ALL if mode == "update" else dt.NUMERIC + dt.COMPLEX)
    x, idx, upd = types
    check_dtype(op, "indices", idx, dt.INTS)
    if x.shape is not None and idx.shape is not None and upd.shape is not None:
        if len(idx.shape) < 1 or idx.shape[-1] is not None and idx.shape[-1] > len(x.shape):
            raise fail(op, f"indices of shape {format_dims(idx.shape)} must have a last "
                           f"dimension of at most the rank of the input "
                           f"(shape {format_dims(x.shape)}).")
    if x.shape is not None and idx.shape is not None and upd.shape is not None and \
            idx.shape[-1] is not None:
        want = tuple(idx.shape[:-1]) + tuple(x.shape[idx.shape[-1]:])
        if not _dims_match(want, upd.shape):
            raise fail(op, f"updates must have shape indices.shape[:-1] + "
                           f"input.shape[indices.shape[-1]:] = {format_dims(want)}, got "
                           f"{format_dims(upd.shape)}.")
    return [TensorType(x.dtype, x.shape)]


def _scatter_kernel(x, indices, updates, mode):
    out = np.array(x, copy=True)
    indices = np.asarray(indices)
    k = indices.shape[-1]
    rows = indices.reshape(-1, k)
    for n, index in enumerate(rows):
        if not all(0 <= i < s for i, s in zip(index, out.shape)):
            raise IndexError(scatter_index_error(indices.shape, n, index, out.shape))
    ups = np.asarray(updates).reshape((len(rows),) + out.shape[k:])
    for index, u in zip(rows, ups):  # in order: the last of repeated updates wins
        at = tuple(int(i) for i in index)
        out[at] = u if mode == "update" else out[at] + u if mode == "add" else out[at] - u
    return out


def _scatter_examples(rng, d):
    x = values(rng, d, (4, 3))
    modes = ("update",) if d == dt.bool_ else SCATTER_MODES
    # repeated indices only where their order does not matter
    rows = {"update": [[1], [3], [0]], "add": [[1], [3], [1]], "sub": [[1], [3], [1]]}
    return [Example((x, np.array(rows[m], np.int32), values(rng, d, (3, 3))), {"mode": m})
            for m in modes] + \
        [Example((x, np.array([[0, 2], [3, 1]], np.int64), values(rng, d, (2,))),
                 {"mode": modes[-1]})]


scatter_nd_op = OpDef(
    name="scatter_nd", kind=Kind.SHAPE, inputs=("input", "indices", "updates"),
    attrs=("mode",), infer=_scatter_infer, kernel=_scatter_kernel, dtypes=dt.ALL, unify=(0, 2),
    examples=_scatter_examples,
    doc="`input` with the slices at `indices` (last axis: a position among the leading dims) "
        "replaced by (mode 'update'), increased by ('add') or decreased by ('sub') `updates`; "
        "indices outside the shape raise (TensorFlow's tensor_scatter_nd_* / "
        "Variable.scatter_nd_*).")
