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


# --------------------------------------------------------------------------- templates
# One loop nest per family, its combiner chosen by name at compile time: ``_fold3(x3, out,
# "sum")`` is typed with the name as a string literal, so the overload below picks the step
# function and numba compiles the nest into the calling kernel (one specialization per
# kernel and dtype, as when each kernel wrote its own loops). The steps are inlined into the
# nest at Numba-IR level: as separate functions they cost a third more compile time; inlined,
# the library's first compile (cached per installation) takes ~15% longer than with one loop
# nest written per combiner, and runs as fast.

_step_jit = numba.njit(inline="always")

@_step_jit
def _add(acc, v):
    return acc + v


@_step_jit
def _mul(acc, v):
    return acc * v


@_step_jit
def _max(acc, v):
    return v if v > acc or v != v else acc  # noqa: PLR0124 (NaN propagates; typed for ints)


@_step_jit
def _min(acc, v):
    return v if v < acc or v != v else acc  # noqa: PLR0124


@_step_jit
def _and(acc, v):
    return acc and v


@_step_jit
def _or(acc, v):
    return acc or v


@_step_jit
def _above(v, best):
    return v > best or (v != v and best == best)  # noqa: PLR0124 (the first NaN wins)


@_step_jit
def _below(v, best):
    return v < best or (v != v and best == best)  # noqa: PLR0124


_STEPS = {"sum": _add, "prod": _mul, "max": _max, "min": _min, "all": _and, "any": _or,
          "argmax": _above, "argmin": _below}


def _step(kind):
    if not isinstance(kind, types.StringLiteral):
        return None   # numba retries with the literal type
    return _STEPS[kind.literal_value]


def _fold3(x3, out, kind):  # pragma: no cover - typed by the overload below
    raise TypeError("_fold3 is only callable from njit code.")


@overload(_fold3)
def _ol_fold3(x3, out, kind):
    step = _step(kind)
    if step is None:
        return None

    def fold(x3, out, kind):
        """``out[i, k] = step(out[i, k], x3[i, j, k])`` over axis 1, in ``out``'s dtype."""
        n0, n1, n2 = x3.shape
        for i in range(n0):
            for j in range(n1):
                for k in range(n2):
                    out[i, k] = step(out[i, k], x3[i, j, k])
        return out
    return fold


def _arg3(x3, out_dtype, kind):  # pragma: no cover - typed by the overload below
    raise TypeError("_arg3 is only callable from njit code.")


@overload(_arg3)
def _ol_arg3(x3, out_dtype, kind):
    better = _step(kind)
    if better is None:
        return None

    def arg(x3, out_dtype, kind):
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
                    if better(v, best[k]):
                        best[k] = v
                        out[i, k] = j
        return out
    return arg


def _scan3(x3, exclusive, reverse, identity, kind):  # pragma: no cover - typed below
    raise TypeError("_scan3 is only callable from njit code.")


@overload(_scan3)
def _ol_scan3(x3, exclusive, reverse, identity, kind):
    step = _step(kind)
    if step is None:
        return None

    def scan(x3, exclusive, reverse, identity, kind):
        n0, n1, n2 = x3.shape
        out = np.empty((n0, n1, n2), x3.dtype)
        acc = np.empty(n2, x3.dtype)
        for i in range(n0):
            acc[:] = identity
            for jj in range(n1):
                j = n1 - 1 - jj if reverse else jj
                for k in range(n2):
                    if exclusive:
                        out[i, j, k] = acc[k]
                        acc[k] = step(acc[k], x3[i, j, k])
                    else:
                        acc[k] = step(acc[k], x3[i, j, k])
                        out[i, j, k] = acc[k]
        return out
    return scan


def _out(x3, fill, dtype):  # pragma: no cover - typed by the overload below
    raise TypeError("_out is only callable from njit code.")


@overload(_out)
def _ol_out(x3, fill, dtype):
    def out(x3, fill, dtype):
        return np.full((x3.shape[0], x3.shape[2]), fill, dtype)
    return out


# --------------------------------------------------------------------------- reductions

@_jit
def sum3(x3):
    """Sum over axis 1 of a C-contiguous 3-D array, in ``x3.dtype`` (ints wrap)."""
    return _fold3(x3, _out(x3, 0, x3.dtype), "sum")


@_jit
def prod3(x3):
    """Product over axis 1 in ``x3.dtype`` (ints wrap)."""
    return _fold3(x3, _out(x3, 1, x3.dtype), "prod")


@_jit
def max3(x3):
    """Maximum over axis 1; NaN propagates; an empty axis gives -inf / the int minimum."""
    return _fold3(x3, _out(x3, _lowest(x3), x3.dtype), "max")


@_jit
def min3(x3):
    """Minimum over axis 1; NaN propagates; an empty axis gives +inf / the int maximum."""
    return _fold3(x3, _out(x3, _highest(x3), x3.dtype), "min")


def _mean_impl(x3):  # pragma: no cover
    raise TypeError("_mean_impl is only callable from njit code: its implementation is "
                    "the @overload below, chosen by numba per dtype.")


def _mean_float(x3):
    out = _fold3(x3, _out(x3, 0, x3.dtype), "sum")
    n1 = x3.shape[1]
    for i in range(out.shape[0]):
        for k in range(out.shape[1]):
            out[i, k] = out[i, k] / n1          # n1 == 0 -> NaN (error_model="numpy")
    return out


def _mean_int(x3):
    tot = _fold3(x3, _out(x3, 0, np.int64), "sum")
    cnt = np.int64(max(x3.shape[1], 1))
    out = np.empty(tot.shape, x3.dtype)
    for i in range(tot.shape[0]):
        for k in range(tot.shape[1]):
            t = tot[i, k]
            q = (-t) // cnt if t < 0 else t // cnt
            out[i, k] = -q if t < 0 else q
    return out


@overload(_mean_impl)
def _ol_mean_impl(x3):
    return _mean_float if isinstance(x3.dtype, (types.Float, types.Complex)) else _mean_int


@_jit
def mean3(x3):
    """Mean over axis 1 in ``x3.dtype``: floats sum in their dtype then divide; ints sum in
    int64 and truncate toward zero (TensorFlow semantics)."""
    return _mean_impl(x3)


@_jit
def all3(x3):
    """Logical AND over axis 1 of a boolean array (True for an empty axis)."""
    return _fold3(x3, _out(x3, True, np.bool_), "all")


@_jit
def any3(x3):
    """Logical OR over axis 1 of a boolean array (False for an empty axis)."""
    return _fold3(x3, _out(x3, False, np.bool_), "any")


# --------------------------------------------------------------------------- arg-reductions

@_jit
def argmax3(x3, out_dtype):
    """Index of the first maximum along axis 1 (the first NaN wins, like NumPy), as an
    ``(outer, inner)`` array of ``out_dtype`` (``np.int32`` or ``np.int64``)."""
    return _arg3(x3, out_dtype, "argmax")


@_jit
def argmin3(x3, out_dtype):
    """Index of the first minimum along axis 1 (the first NaN wins, like NumPy)."""
    return _arg3(x3, out_dtype, "argmin")


# --------------------------------------------------------------------------- scans

@_jit
def cumsum3(x3, exclusive, reverse):
    """Cumulative sum along axis 1 of a C-contiguous 3-D array in ``x3.dtype`` (sequential,
    bit-identical to ``np.cumsum``); ``exclusive`` shifts by one with 0 first, ``reverse``
    accumulates from the end."""
    return _scan3(x3, exclusive, reverse, 0, "sum")


@_jit
def cumprod3(x3, exclusive, reverse):
    """Cumulative product along axis 1 (see :func:`cumsum3`); the exclusive identity is 1."""
    return _scan3(x3, exclusive, reverse, 1, "prod")


# --------------------------------------------------------------------------- sorting

@_jit
def argsort3(x3, descending):
    """Stable int32 sorting positions along axis 1 of a 3-D array (NaN last ascending, first
    descending: the op table's rule), row by row with NumPy's mergesort."""
    n0, n1, n2 = x3.shape
    out = np.empty((n0, n1, n2), np.int32)
    row = np.empty(n1, x3.dtype)
    for i in range(n0):
        for k in range(n2):
            for j in range(n1):
                row[j] = x3[i, n1 - 1 - j if descending else j, k]
            order = np.argsort(row, kind="mergesort")
            for j in range(n1):
                if descending:
                    out[i, n1 - 1 - j, k] = n1 - 1 - order[j]
                else:
                    out[i, j, k] = order[j]
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
