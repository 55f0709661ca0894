"""Reductions over axes (sum, mean, max, min, prod, all, any), arg-reductions and scans."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.dtypes import DType
from stagecraft.ir.ops.infer import check_unified, fail, normalize_axes, normalize_axis
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import Dims
from stagecraft.ir.types import TensorType

REDUCE_CASES = [((), None), ((5,), None), ((5,), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)),
                ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1,))]


def reduced_dims(shape: Dims, axes: tuple[int, ...] | None, keepdims: bool) -> Dims:
    if shape is None:
        return None
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction(name: str, kernel: Callable, dtypes: Sequence[DType], doc: str, *, lo: float = -2.0,
              hi: float = 2.0, copying: bool = False) -> OpDef:
    """A reduction with attributes ``axes`` (tuple of ints or None = all) and ``keepdims``."""
    def infer(types, axes, keepdims, _op=name):
        d = check_unified(_op, ("input_tensor",), types, (0,), dtypes)
        norm = normalize_axes(_op, axes, types[0].rank)
        return [TensorType(d, reduced_dims(types[0].shape, norm, keepdims))]

    def run(x, axes, keepdims):
        return kernel(x, None if axes is None else tuple(axes), keepdims)

    def examples(rng, d):
        return [Example((values(rng, d, s, lo, hi),), {"axes": a, "keepdims": k})
                for s, a in REDUCE_CASES for k in (False, True)]

    return OpDef(name=name, kind=Kind.REDUCE, inputs=("input_tensor",), attrs=("axes", "keepdims"),
                 infer=infer, kernel=run, dtypes=tuple(dtypes), unify=(0,), examples=examples,
                 doc=doc, copying=copying)


def _mean(x, axes, keepdims):
    if x.dtype.kind in "fc":
        return np.mean(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
    # Integer mean truncates toward zero, as TensorFlow's does.
    total = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
    count = max(x.size // max(np.size(total), 1), 1) if x.size else 1
    return (np.sign(total) * (np.abs(total) // count)).astype(x.dtype)


def _extreme(fn, initial_of):
    def run(x, axes, keepdims):
        # TensorFlow reduces empty tensors to the identity (-inf for max) instead of raising.
        return fn(x, axis=axes, keepdims=keepdims, initial=initial_of(x.dtype))
    return run


def _lowest(d):
    return -np.inf if d.kind == "f" else np.iinfo(d).min


def _highest(d):
    return np.inf if d.kind == "f" else np.iinfo(d).max


N, B = dt.NUMERIC, (dt.bool_,)
NC = N + dt.COMPLEX  # sums, means and products of complex numbers, as TensorFlow has
reduce_sum_op = reduction(
    "reduce_sum", lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=x.dtype), NC,
    "Sum over `axis` (all axes when None).", copying=True)
reduce_mean_op = reduction("reduce_mean", _mean, NC,
                           "Mean over `axis`; integer means truncate toward zero like TensorFlow.",
                           copying=True)
reduce_max_op = reduction("reduce_max", _extreme(np.max, _lowest), N,
                          "Maximum over `axis`; an empty reduction gives the dtype's lowest value.",
                          copying=True)
reduce_min_op = reduction("reduce_min", _extreme(np.min, _highest), N,
                          "Minimum over `axis`; an empty reduction gives the dtype's highest "
                          "value.", copying=True)
reduce_prod_op = reduction(
    "reduce_prod", lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=x.dtype), NC,
    "Product over `axis`.", lo=0.5, hi=1.5, copying=True)
reduce_all_op = reduction("reduce_all", lambda x, a, k: np.all(x, axis=a, keepdims=k), B,
                          "Logical AND over `axis`.")
reduce_any_op = reduction("reduce_any", lambda x, a, k: np.any(x, axis=a, keepdims=k), B,
                          "Logical OR over `axis`.")


def arg_reduction(name: str, fn: Callable, doc: str) -> OpDef:
    def infer(types, axis, output_type, _op=name):
        check_unified(_op, ("input",), types, (0,), N)
        shape = types[0].shape
        if shape is not None and len(shape) == 0:
            raise fail(_op, "the input is a scalar; it needs at least one dimension.")
        a = normalize_axis(_op, axis, types[0].rank)
        if output_type not in dt.INTS:
            raise fail(_op, f"output_type must be int32 or int64, got {output_type.name}.")
        out = None if shape is None else shape[:a] + shape[a + 1:]
        return [TensorType(output_type, out)]

    def kernel(x, axis, output_type):
        if x.shape[axis] == 0:
            raise ValueError("Reduction axis is empty")
        return fn(x, axis=axis).astype(output_type.np)

    def examples(rng, d):
        return [Example((values(rng, d, s, -5, 5),), {"axis": a, "output_type": o})
                for s, a in [((5,), 0), ((3, 4), 1), ((3, 4), -2)] for o in dt.INTS]

    return OpDef(name=name, kind=Kind.REDUCE, inputs=("input",), attrs=("axis", "output_type"),
                 infer=infer, kernel=kernel, dtypes=N, unify=(0,), examples=examples, doc=doc)


argmax_op = arg_reduction("argmax", np.argmax, "Index of the largest value along `axis`.")
argmin_op = arg_reduction("argmin", np.argmin, "Index of the smallest value along `axis`.")


def scan(name: str, fn: Callable, identity: int, doc: str, lo: float = -2.0,
         hi: float = 2.0) -> OpDef:
    def infer(types, axis, exclusive, reverse, _op=name):
        d = check_unified(_op, ("x",), types, (0,), NC)
        if types[0].rank == 0:
            raise fail(_op, "the input is a scalar; it needs at least one dimension.")
        normalize_axis(_op, axis, types[0].rank)
        return [TensorType(d, types[0].shape)]

    def kernel(x, axis, exclusive, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = fn(x, axis=axis, dtype=x.dtype)
        if exclusive:
            out = np.roll(out, 1, axis=axis)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(0, 1)
            out[tuple(idx)] = identity
        return np.flip(out, axis) if reverse else out

    def examples(rng, d):
        return [Example((values(rng, d, s, lo, hi),),
                        {"axis": a, "exclusive": e, "reverse": r})
                for s, a in [((5,), 0), ((3, 4), 1), ((3, 4), -2)]
                for e in (False, True) for r in (False, True)]

    return OpDef(name=name, kind=Kind.REDUCE, inputs=("x",),
                 attrs=("axis", "exclusive", "reverse"), infer=infer, kernel=kernel, dtypes=NC,
                 unify=(0,), examples=examples, doc=doc)


cumsum_op = scan("cumsum", np.cumsum, 0, "Cumulative sum along `axis` (optionally exclusive "
                 "and/or reversed).")
cumprod_op = scan("cumprod", np.cumprod, 1, "Cumulative product along `axis` (optionally "
                  "exclusive and/or reversed).", lo=0.5, hi=1.5)


def _argsort_infer(types, axis, descending):
    check_unified("argsort", ("values",), types, (0,), N)
    if types[0].shape is not None and len(types[0].shape) == 0:
        raise fail("argsort", "the input is a scalar; it needs at least one dimension.")
    normalize_axis("argsort", axis, types[0].rank)
    return [TensorType(dt.int32, types[0].shape)]


def _argsort_kernel(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int32)
    # descending and stable (ties keep their order; NaN counts as the largest): the stable
    # ascending order of the reversed input, mapped back and reversed
    n = x.shape[axis]
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - order, axis).astype(np.int32)


argsort_op = OpDef(
    name="argsort", kind=Kind.REDUCE, inputs=("values",), attrs=("axis", "descending"),
    infer=_argsort_infer, kernel=_argsort_kernel, dtypes=N, unify=(0,),
    examples=lambda rng, d: [Example((values(rng, d, s, -5, 5),), {"axis": a, "descending": o})
                             for s, a in [((6,), 0), ((3, 5), 1), ((4, 3), 0)]
                             for o in (False, True)],
    doc="The int32 positions that sort `values` along `axis` (stable: equal values keep their "
        "order; `descending` puts the largest first; NaN counts as the largest).")
