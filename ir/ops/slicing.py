"""Strided slicing (``x[1:, ::2, tf.newaxis, ..., i]``) and its adjoint.

The ``spec`` attribute is a tuple of items, each a plain tuple so it prints as a literal:
``("index", i)``, ``("slice", start, stop, step)``, ``("newaxis",)``, ``("ellipsis",)``.
A bound may be an int, None, or ``"$k"``: the k-th extra input (a scalar int tensor), which is
how indices computed at run time are passed.
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, fail
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
    examples=_slice_examples, variadic=True,
    doc="NumPy basic indexing: ints, slices with steps, newaxis and ellipsis.")


def _slice_grad_infer(types, spec):
    check_dtype("strided_slice_grad", "grad", types[0], dt.NUMERIC)
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
    attrs=("spec",), infer=_slice_grad_infer, kernel=_slice_grad_kernel, dtypes=dt.NUMERIC,
    unify=(0,), examples=_slice_grad_examples, variadic=True,
    doc="Writes `grad` into zeros shaped like `like` at the sliced positions (the adjoint of "
        "strided_slice).")
