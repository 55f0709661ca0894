"""Reductions, arg-reductions and scans as Numba kernels over (outer, reduced, inner) views.

Contract for generated code (and the plain-Python ``run_*`` adapters at the bottom, which are
what codegen should emit, minus the Python):

* Reductions over any set of axes: at compile time call :func:`reduction_plan` ``(shape,
  axes, keepdims) -> (perm, outer, reduced, inner, out_shape)`` with the static shape; emit
  ``x3 = K.to3(x, perm, outer, reduced, inner)`` (or, when ``perm`` is the identity,
  ``np.ascontiguousarray(x).reshape(outer, reduced, inner)``), then
  ``K.<op>3(x3).reshape(out_shape)``.  The kernels take a C-contiguous 3-D array and return
  a fresh C-contiguous ``(outer, inner)`` array with exactly the reference dtype (the input
  dtype for sum/mean/max/min/prod, ``bool`` for all/any), so the reshape never copies and a
  rank-0 result stays a 0-d array.
* Arg-reductions: :func:`scan_plan` ``(shape, axis) -> (outer, n, inner, out_shape)``; emit
  ``K.argmax3(x.reshape(outer, n, inner), out_dtype).reshape(out_shape)`` where
  ``out_dtype`` is ``np.int32`` or ``np.int64`` (a NumPy scalar class; each class is one
  specialization).  Raises ``ValueError`` on an empty axis like the reference.
* Scans: ``K.cumsum3(x.reshape(outer, n, inner), exclusive, reverse).reshape(shape)``
  (``exclusive``/``reverse`` are runtime booleans: one specialization per dtype).

Numerics: integer sums and products wrap exactly like NumPy's fixed-width ones; float sums
accumulate sequentially in the input dtype (NumPy uses pairwise summation along a contiguous
axis, so float results can differ in the last bits for long reductions); scans match NumPy
bit for bit; max/min propagate NaN and reduce empty axes to -inf/+inf (floats) or the
dtype's min/max (ints); float mean of an empty axis is NaN; integer mean sums in int64 and
truncates toward zero.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


# --------------------------------------------------------------------------- plans (Python)

def _prod(dims) -> int:
    return int(math.prod(dims))


def reduction_plan(shape, axes, keepdims: bool = False):
    """Static bookkeeping for reducing an array of ``shape`` over ``axes`` (None = all).

    Returns ``(perm, outer, reduced, inner, out_shape)``: transpose by ``perm`` (a tuple;
    the identity when the reduced axes already form one contiguous block), make contiguous
    and reshape to ``(outer, reduced, inner)``; the kernel's ``(outer, inner)`` result
    reshapes to ``out_shape``.  Kept axes after the last reduced axis stay in place (as
    ``inner``), so reducing leading axes needs no transpose.
    """
    shape = tuple(int(d) for d in shape)
    nd = len(shape)
    if axes is None:
        red = tuple(range(nd))
    else:
        if isinstance(axes, int):
            axes = (axes,)
        red = tuple(sorted({a + nd if a < 0 else a for a in axes}))
        for a in red:
            if not 0 <= a < nd:
                raise ValueError(f"axis out of range for rank {nd}: {axes}")
    if keepdims:
        out_shape = tuple(1 if i in red else d for i, d in enumerate(shape))
    else:
        out_shape = tuple(d for i, d in enumerate(shape) if i not in red)
    if not red:
        return tuple(range(nd)), _prod(shape), 1, 1, out_shape
    last = red[-1]
    before = tuple(i for i in range(last) if i not in red)
    after = tuple(range(last + 1, nd))
    perm = before + red + after
    outer = _prod(shape[i] for i in before)
    reduced = _prod(shape[i] for i in red)
    inner = _prod(shape[i] for i in after)
    return perm, outer, reduced, inner, out_shape


def scan_plan(shape, axis: int):
    """``(outer, n, inner, out_shape)`` for an arg-reduction or scan along ``axis``:
    a C-contiguous array reshapes to ``(outer, n, inner)`` without a transpose;
    ``out_shape`` is the shape with ``axis`` removed (the arg-reduction result)."""
    shape = tuple(int(d) for d in shape)
    nd = len(shape)
    a = axis + nd if axis < 0 else axis
    if not 0 <= a < nd:
        raise ValueError(f"axis {axis} out of range for rank {nd}")
    return _prod(shape[:a]), shape[a], _prod(shape[a + 1:]), shape[:a] + shape[a + 1:]


# --------------------------------------------------------------------------- dtype helpers

def _lowest(x):  # pragma: no cover - typed by the overload below
    raise TypeError("_lowest is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


def _highest(x):  # pragma: no cover
    raise TypeError("_highest is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


@overload(_lowest)
def _ol_lowest(x):
    d = x.dtype
    if isinstance(d, types.Float):
        return lambda x: -np.inf
    lo = int(np.iinfo(np.dtype(str(d))).min)
    return lambda x: lo


@overload(_highest)
def _ol_highest(x):
    d = x.dtype
    if isinstance(d, types.Float):
        return lambda x: np.inf
    hi = int(np.iinfo(np.dtype(str(d))).max)
    return lambda x: hi


# --------------------------------------------------------------------------- layout

def _to3_impl(x, perm, outer, reduced, inner):  # pragma: no cover - typed by the overload
    raise TypeError("_to3_impl is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


def _to3_reshape(x, perm, outer, reduced, inner):
    return x.reshape(outer, reduced, inner)


def _to3_gather(x, perm, outer, reduced, inner):
    # An odometer over the permuted shape reading the C-ordered source: compiles in a
    # fraction of the time np.ascontiguousarray(np.transpose(x, perm)) takes (0.3 s vs 1.6 s
    # per dtype and rank) and makes exactly one copy.
    nd = len(perm)
    shp = np.empty(nd, np.int64)
    st = np.empty(nd, np.int64)
    cst = np.empty(nd, np.int64)
    s = 1
    for dd in range(nd):
        d = nd - 1 - dd
        cst[d] = s
        s *= x.shape[d]
    identity = True
    for d in range(nd):
        shp[d] = x.shape[perm[d]]
        st[d] = cst[perm[d]]
        if perm[d] != d:
            identity = False
    flat = x.ravel()
    if identity:
        return flat.reshape(outer, reduced, inner)
    out = np.empty(flat.size, x.dtype)
    idx = np.zeros(nd, np.int64)
    off = 0
    for t in range(flat.size):
        out[t] = flat[off]
        d = nd - 1
        while d >= 0:
            idx[d] += 1
            off += st[d]
            if idx[d] < shp[d]:
                break
            off -= st[d] * shp[d]
            idx[d] = 0
            d -= 1
    return out.reshape(outer, reduced, inner)


@overload(_to3_impl)
def _ol_to3_impl(x, perm, outer, reduced, inner):
    # 0-d arrays (empty permutation): a plain reshape; typing `perm[d]` needs a non-empty tuple.
    return _to3_reshape if x.ndim == 0 else _to3_gather


@_jit
def to3(x, perm, outer, reduced, inner):
    """``x`` (C-contiguous) transposed by ``perm`` (a tuple of ``x.ndim`` ints, as
    :func:`reduction_plan` returns it) as a C-contiguous ``(outer, reduced, inner)`` array:
    a view when ``perm`` is the identity, else one copy.  A non-contiguous ``x`` works but
    is raveled (copied) first and compiles a separate specialization."""
    return _to3_impl(x, perm, outer, reduced, inner)


# --------------------------------------------------------------------------- reductions

@_jit
def sum3(x3):
    """Sum over axis 1 of a C-contiguous 3-D array, in ``x3.dtype`` (ints wrap)."""
    n0, n1, n2 = x3.shape
    out = np.zeros((n0, n2), x3.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                out[i, k] += x3[i, j, k]
    return out


@_jit
def prod3(x3):
    """Product over axis 1 in ``x3.dtype`` (ints wrap)."""
    n0, n1, n2 = x3.shape
    out = np.ones((n0, n2), x3.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                out[i, k] *= x3[i, j, k]
    return out


@_jit
def max3(x3):
    """Maximum over axis 1; NaN propagates; an empty axis gives -inf / the int minimum."""
    n0, n1, n2 = x3.shape
    out = np.full((n0, n2), _lowest(x3), x3.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                v = x3[i, j, k]
                if v > out[i, k] or v != v:  # noqa: PLR0124 (NaN test, also typed for ints)
                    out[i, k] = v
    return out


@_jit
def min3(x3):
    """Minimum over axis 1; NaN propagates; an empty axis gives +inf / the int maximum."""
    n0, n1, n2 = x3.shape
    out = np.full((n0, n2), _highest(x3), x3.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                v = x3[i, j, k]
                if v < out[i, k] or v != v:  # noqa: PLR0124 (NaN test, also typed for ints)
                    out[i, k] = v
    return out


def _mean_impl(x3):  # pragma: no cover
    raise TypeError("_mean_impl is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


def _mean_float(x3):
    n0, n1, n2 = x3.shape
    out = np.zeros((n0, n2), x3.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                out[i, k] += x3[i, j, k]
    for i in range(n0):
        for k in range(n2):
            out[i, k] = out[i, k] / n1          # n1 == 0 -> NaN (error_model="numpy")
    return out


def _mean_int(x3):
    n0, n1, n2 = x3.shape
    tot = np.zeros((n0, n2), np.int64)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                tot[i, k] += np.int64(x3[i, j, k])
    cnt = np.int64(max(n1, 1))
    out = np.empty((n0, n2), x3.dtype)
    for i in range(n0):
        for k in range(n2):
            t = tot[i, k]
            q = (-t) // cnt if t < 0 else t // cnt
            out[i, k] = -q if t < 0 else q
    return out


@overload(_mean_impl)
def _ol_mean_impl(x3):
    return _mean_float if isinstance(x3.dtype, types.Float) else _mean_int


@_jit
def mean3(x3):
    """Mean over axis 1 in ``x3.dtype``: floats sum in their dtype then divide; ints sum in
    int64 and truncate toward zero (TensorFlow semantics)."""
    return _mean_impl(x3)


@_jit
def all3(x3):
    """Logical AND over axis 1 of a boolean array (True for an empty axis)."""
    n0, n1, n2 = x3.shape
    out = np.ones((n0, n2), np.bool_)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                if not x3[i, j, k]:
                    out[i, k] = False
    return out


@_jit
def any3(x3):
    """Logical OR over axis 1 of a boolean array (False for an empty axis)."""
    n0, n1, n2 = x3.shape
    out = np.zeros((n0, n2), np.bool_)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                if x3[i, j, k]:
                    out[i, k] = True
    return out


# --------------------------------------------------------------------------- arg-reductions

@_jit
def argmax3(x3, out_dtype):
    """Index of the first maximum along axis 1 (the first NaN wins, like NumPy), as an
    ``(outer, inner)`` array of ``out_dtype`` (``np.int32`` or ``np.int64``)."""
    n0, n1, n2 = x3.shape
    if n1 == 0:
        raise ValueError("Reduction axis is empty")
    out = np.zeros((n0, n2), out_dtype)
    best = np.empty(n2, x3.dtype)
    for i in range(n0):
        for k in range(n2):
            best[k] = x3[i, 0, k]
        for j in range(1, n1):
            for k in range(n2):
                v = x3[i, j, k]
                b = best[k]
                if v > b or (v != v and b == b):  # noqa: PLR0124 (NaN test, also typed for ints)
                    best[k] = v
                    out[i, k] = j
    return out


@_jit
def argmin3(x3, out_dtype):
    """Index of the first minimum along axis 1 (the first NaN wins, like NumPy)."""
    n0, n1, n2 = x3.shape
    if n1 == 0:
        raise ValueError("Reduction axis is empty")
    out = np.zeros((n0, n2), out_dtype)
    best = np.empty(n2, x3.dtype)
    for i in range(n0):
        for k in range(n2):
            best[k] = x3[i, 0, k]
        for j in range(1, n1):
            for k in range(n2):
                v = x3[i, j, k]
                b = best[k]
                if v < b or (v != v and b == b):  # noqa: PLR0124 (NaN test, also typed for ints)
                    best[k] = v
                    out[i, k] = j
    return out


# --------------------------------------------------------------------------- scans

@_jit
def cumsum3(x3, exclusive, reverse):
    """Cumulative sum along axis 1 of a C-contiguous 3-D array in ``x3.dtype`` (sequential,
    bit-identical to ``np.cumsum``); ``exclusive`` shifts by one with 0 first, ``reverse``
    accumulates from the end."""
    n0, n1, n2 = x3.shape
    out = np.empty((n0, n1, n2), x3.dtype)
    acc = np.zeros(n2, x3.dtype)
    for i in range(n0):
        acc[:] = 0
        for jj in range(n1):
            j = n1 - 1 - jj if reverse else jj
            for k in range(n2):
                if exclusive:
                    out[i, j, k] = acc[k]
                    acc[k] += x3[i, j, k]
                else:
                    acc[k] += x3[i, j, k]
                    out[i, j, k] = acc[k]
    return out


@_jit
def cumprod3(x3, exclusive, reverse):
    """Cumulative product along axis 1 (see :func:`cumsum3`); the exclusive identity is 1."""
    n0, n1, n2 = x3.shape
    out = np.empty((n0, n1, n2), x3.dtype)
    acc = np.ones(n2, x3.dtype)
    for i in range(n0):
        acc[:] = 1
        for jj in range(n1):
            j = n1 - 1 - jj if reverse else jj
            for k in range(n2):
                if exclusive:
                    out[i, j, k] = acc[k]
                    acc[k] *= x3[i, j, k]
                else:
                    acc[k] *= x3[i, j, k]
                    out[i, j, k] = acc[k]
    return out


# --------------------------------------------------------------------------- adapters
# Plain Python: what generated code does, for tests and the eager path.  Not a hot path.

REDUCE3 = {"reduce_sum": sum3, "reduce_mean": mean3, "reduce_max": max3, "reduce_min": min3,
           "reduce_prod": prod3, "reduce_all": all3, "reduce_any": any3}
ARG3 = {"argmax": argmax3, "argmin": argmin3}
SCAN3 = {"cumsum": cumsum3, "cumprod": cumprod3}


def run_reduce(op_name: str, x, axes, keepdims: bool):
    x = np.asarray(x)
    perm, outer, reduced, inner, out_shape = reduction_plan(x.shape, axes, keepdims)
    if perm == tuple(range(x.ndim)):  # no transpose: a reshape (what codegen should emit)
        x3 = np.ascontiguousarray(x).reshape(outer, reduced, inner)
    else:
        x3 = to3(np.ascontiguousarray(x), perm, outer, reduced, inner)
    return REDUCE3[op_name](x3).reshape(out_shape)


def run_arg(op_name: str, x, axis: int, output_type):
    """``output_type``: a stagecraft DType (``.np``) or a NumPy integer dtype/class."""
    x = np.ascontiguousarray(x)
    outer, n, inner, out_shape = scan_plan(x.shape, axis)
    od = getattr(output_type, "np", output_type)
    od = np.dtype(od).type
    return ARG3[op_name](x.reshape(outer, n, inner), od).reshape(out_shape)


def run_scan(op_name: str, x, axis: int, exclusive: bool, reverse: bool):
    x = np.ascontiguousarray(x)
    outer, n, inner, _ = scan_plan(x.shape, axis)
    return SCAN3[op_name](x.reshape(outer, n, inner), bool(exclusive),
                          bool(reverse)).reshape(x.shape)
