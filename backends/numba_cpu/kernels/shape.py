"""Numba kernels for the shape ops of ``ir/ops/shape.py``: gather, gather_grad, one_hot, concat,
tile, broadcast_to / broadcast_like, sum_like and the -1 of reshape_dynamic.

Contract for the code generator (every function is ``njit(cache=True, error_model="numpy",
nogil=True)`` and is called from inside the generated graph function):

* Every array argument must be **C-contiguous** (kernels reshape them to canonical low-rank
  views, which Numba only allows on contiguous arrays); the generator applies
  ``np.ascontiguousarray`` at the graph boundary and after any view-producing op.
* Outputs are **preallocated by the caller** with the exact IR dtype and shape (``out``) and
  filled in place (``*_into``); nothing is returned, so no dtype can be lost to Numba's
  promotion rules. Integer arithmetic wraps exactly as NumPy's fixed-width arithmetic does.
* Static attributes (``axis``, ``batch_dims``) are plain ``int`` arguments that the generator
  bakes in as literals; they must already be **normalized to be non-negative** (use
  :func:`normalize` below at generation time). Kernels specialise only on dtypes and ranks.
* Rank-0 IR values (``on_value``/``off_value``) are passed as 0-d arrays.
"""
from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

_JIT = dict(cache=True, error_model="numpy", nogil=True)


def normalize(axis: int, rank: int) -> int:
    """Plain Python: ``axis`` in [0, rank) (generation time)."""
    return axis % rank if rank else 0


def gather_out_shape(params_shape, indices_shape, axis: int, batch_dims: int) -> tuple:
    """Plain Python: the output shape of gather (axis/batch_dims normalized)."""
    return (tuple(params_shape[:axis]) + tuple(indices_shape[batch_dims:])
            + tuple(params_shape[axis + 1:]))


def one_hot_out_shape(indices_shape, depth: int, axis: int) -> tuple:
    """Plain Python: output shape of one_hot; ``axis`` may be -1 (last) or in [0, rank]."""
    a = len(indices_shape) if axis == -1 else axis % (len(indices_shape) + 1)
    return tuple(indices_shape[:a]) + (depth,) + tuple(indices_shape[a:])


@numba.njit(**_JIT)
def _prod(shape, lo, hi):
    n = 1
    for d in range(lo, hi):
        n *= shape[d]
    return n


# ------------------------------------------------------------------------------ gather

@numba.njit(**_JIT)
def _check_indices(i2, n):
    """Raises IndexError unless every index of the (batch, m) array is in [0, n)."""
    for b in range(i2.shape[0]):
        for j in range(i2.shape[1]):
            k = i2[b, j]
            if k < 0 or k >= n:
                raise IndexError("gather: an index is out of range [0, params.shape[axis]); "
                                 "negative indices are not allowed")


@numba.njit(**_JIT)
def gather_into(params, indices, out, axis, batch_dims):
    """out[b.., o.., idx.., i..] = params[b.., o.., indices[b.., idx..], i..].

    ``out`` has shape params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]
    and params' dtype. Any index outside [0, params.shape[axis]) raises IndexError (before
    anything is written), like the reference kernel; negative indices are not allowed."""
    nb = _prod(params.shape, 0, batch_dims)
    no = _prod(params.shape, batch_dims, axis)
    n = params.shape[axis]
    ni = _prod(params.shape, axis + 1, params.ndim)
    m = _prod(indices.shape, batch_dims, indices.ndim)
    p4 = params.reshape((nb, no, n, ni))
    i2 = indices.reshape((nb, m))
    o4 = out.reshape((nb, no, m, ni))
    _check_indices(i2, n)  # before anything is written
    for b in range(nb):
        for o in range(no):
            for j in range(m):
                k = i2[b, j]
                for i in range(ni):
                    o4[b, o, j, i] = p4[b, o, k, i]


@numba.njit(**_JIT)
def take1(params, index):
    """``params[index]`` of a rank-1 array (a scalar gather), with the gather's range check."""
    if index < 0 or index >= params.shape[0]:
        raise IndexError("gather: an index is out of range [0, params.shape[axis]); "
                         "negative indices are not allowed")
    return params[index]


@numba.njit(**_JIT)
def row_update(buffer, index, value, copy):
    """``buffer`` (a copy of it when ``copy``) with row ``index`` (first axis) set to ``value``
    (shaped like one row). An index outside [0, len(buffer)) raises IndexError."""
    n = buffer.shape[0]
    if index < 0 or index >= n:
        raise IndexError("row_update: the index is out of range [0, len(buffer)); a "
                         "fixed-size TensorArray cannot grow (pass dynamic_size=True)")
    out = buffer.copy() if copy else buffer
    rows = out.reshape((n, out.size // n))
    row = value.reshape(rows.shape[1])
    for k in range(rows.shape[1]):
        rows[index, k] = row[k]
    return out


@numba.njit(**_JIT)
def row_update1(buffer, index, value, copy):
    """``row_update`` of a rank-1 buffer with a scalar ``value`` (no 0-d array to box)."""
    if index < 0 or index >= buffer.shape[0]:
        raise IndexError("row_update: the index is out of range [0, len(buffer)); a "
                         "fixed-size TensorArray cannot grow (pass dynamic_size=True)")
    out = buffer.copy() if copy else buffer
    out[index] = value
    return out


@numba.njit(**_JIT)
def gather_grad_into(g, indices, out, axis, batch_dims):
    """Scatter-add: out = zeros(like.shape); out[..., indices[j], ...] += g[..., j, ...].

    ``out`` is shaped like ``like`` with g's dtype; contributions to one element are added in
    index order (the order of ``np.add.at``), so float results match bit for bit. Indices out
    of range raise IndexError."""
    nb = _prod(out.shape, 0, batch_dims)
    no = _prod(out.shape, batch_dims, axis)
    n = out.shape[axis]
    ni = _prod(out.shape, axis + 1, out.ndim)
    m = _prod(indices.shape, batch_dims, indices.ndim)
    o4 = out.reshape((nb, no, n, ni))
    i2 = indices.reshape((nb, m))
    g4 = g.reshape((nb, no, m, ni))
    _check_indices(i2, n)
    o4[...] = 0
    for b in range(nb):
        for o in range(no):
            for j in range(m):
                k = i2[b, j]
                for i in range(ni):
                    o4[b, o, k, i] += g4[b, o, j, i]


# ----------------------------------------------------------------------------- one_hot

@numba.njit(**_JIT)
def one_hot_into(indices, on_value, off_value, out, axis):
    """out[..a, k, a..] = on if indices[..a, a..] == k else off.

    ``on_value``/``off_value``: 0-d arrays of out's dtype. ``axis``: -1 or the output position
    of the depth dimension in [0, indices.ndim]. Out-of-range indices give a row of off."""
    if axis < 0:
        axis += indices.ndim + 1
    on = on_value[()]
    off = off_value[()]
    depth = out.shape[axis]
    no = _prod(indices.shape, 0, axis)
    ni = _prod(indices.shape, axis, indices.ndim)
    i2 = indices.reshape((no, ni))
    o3 = out.reshape((no, depth, ni))
    for o in range(no):
        for k in range(depth):
            for i in range(ni):
                o3[o, k, i] = on if i2[o, i] == k else off


# ------------------------------------------------------------------------------ concat

@numba.njit(**_JIT)
def concat_part_into(src, out, axis, offset):
    """Copies ``src`` into ``out`` at ``offset`` along ``axis``; returns the next offset.

    The generator concatenates n inputs by unrolling: ``o = 0; o = K.concat_part_into(x0, out,
    a, o); o = K.concat_part_into(x1, out, a, o); ...`` (same dtype and rank, no tuples)."""
    no = _prod(src.shape, 0, axis)
    s = src.shape[axis]
    ni = _prod(src.shape, axis + 1, src.ndim)
    t = out.shape[axis]
    s3 = src.reshape((no, s, ni))
    o3 = out.reshape((no, t, ni))
    for o in range(no):
        for j in range(s):
            for i in range(ni):
                o3[o, offset + j, i] = s3[o, j, i]
    return offset + s


@numba.njit(**_JIT)
def concat2_into(a, b, out, axis):
    """``out = concatenate((a, b), axis)`` (convenience over :func:`concat_part_into`)."""
    off = concat_part_into(a, out, axis, 0)
    concat_part_into(b, out, axis, off)


# ---------------------------------------------------------------------------- reshape

@numba.njit(**_JIT)
def reshape_dims(size, dims):
    """``dims`` (1-D int64, the shape a reshape_dynamic asks for) with its -1 resolved so that
    the product is ``size``; raises ValueError (reshape's messages) when that is impossible."""
    out = dims.copy()
    neg = -1
    known = 1
    for i in range(dims.size):
        d = dims[i]
        if d == -1:
            if neg >= 0:
                raise ValueError("reshape: only one dimension may be -1")
            neg = i
        elif d < -1:
            raise ValueError("reshape: dimensions must be >= -1")
        else:
            known *= d
    if neg >= 0:
        if known == 0 or size % known != 0:
            raise ValueError("reshape: Input to reshape is a tensor whose number of values is "
                             "not a multiple of the product of the requested dimensions")
        out[neg] = size // known
    elif known != size:
        raise ValueError("reshape: Input to reshape is a tensor whose number of values differs "
                         "from the number the requested shape holds")
    return out


# ------------------------------------------------------------------- tile / broadcast

@numba.njit(**_JIT)
def tile_into(x, out):
    """``out = np.tile(x, multiples)`` where out.shape[d] = x.shape[d] * multiples[d] (same
    rank as x; the multiples are implied by the shapes)."""
    if out.size == 0:
        return
    xf = x.reshape(x.size)
    of = out.reshape(out.size)
    nd = out.ndim
    for j in range(out.size):
        rem = j
        src = 0
        mul = 1
        for d in range(nd - 1, -1, -1):
            od = out.shape[d]
            xd = x.shape[d]
            idx = rem % od
            rem //= od
            src += (idx % xd) * mul
            mul *= xd
        of[j] = xf[src]


@numba.njit(**_JIT)
def broadcast_into(x, out):
    """Materializes ``np.broadcast_to(x, out.shape)`` into the contiguous ``out`` (x's rank
    may be lower; its dims must be 1 or equal to out's trailing dims)."""
    if out.size == 0:
        return
    xf = x.reshape(x.size)
    of = out.reshape(out.size)
    nd = out.ndim
    lead = nd - x.ndim
    for j in range(out.size):
        rem = j
        src = 0
        mul = 1
        for d in range(nd - 1, lead - 1, -1):
            od = out.shape[d]
            xd = x.shape[d - lead]
            idx = rem % od
            rem //= od
            if xd != 1:
                src += idx * mul
            mul *= xd
        of[j] = xf[src]


# ----------------------------------------------------------------------------- sum_like

@numba.njit(**_JIT)
def _pairwise_sum(a, lo, n):
    """NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src) over a[lo:lo+n],
    in a's dtype: the order NumPy's add.reduce uses on a contiguous inner run."""
    if n < 8:
        res = a[lo]  # NumPy starts from -0.0, and -0.0 + v == v exactly (n >= 1 here)
        for i in range(1, n):
            res += a[lo + i]
        return res
    elif n <= 128:
        r0 = a[lo]
        r1 = a[lo + 1]
        r2 = a[lo + 2]
        r3 = a[lo + 3]
        r4 = a[lo + 4]
        r5 = a[lo + 5]
        r6 = a[lo + 6]
        r7 = a[lo + 7]
        i = 8
        while i < n - n % 8:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    else:
        n2 = n // 2
        n2 -= n2 % 8
        return _pairwise_sum(a, lo, n2) + _pairwise_sum(a, lo + n2, n - n2)


@numba.njit(**_JIT)
def _pairwise_sum_complex(a, lo, n):
    """NumPy's pairwise summation of complex values over a[lo:lo+n] (its complex loop in
    loops_utils.h.src): it walks the 2n real scalars, four complex accumulators unrolled, blocks
    of 64 values, so its order differs from the real one's."""
    if n < 4:
        # NumPy starts from -0.0, and -0.0 + v == v exactly (n >= 1 here)
        rr, ri = a[lo].real, a[lo].imag
        for i in range(1, n):
            rr += a[lo + i].real
            ri += a[lo + i].imag
        return rr, ri
    if n <= 64:
        r0, r1 = a[lo].real, a[lo].imag
        r2, r3 = a[lo + 1].real, a[lo + 1].imag
        r4, r5 = a[lo + 2].real, a[lo + 2].imag
        r6, r7 = a[lo + 3].real, a[lo + 3].imag
        i = 4
        while i < n - n % 4:
            r0 += a[lo + i].real
            r1 += a[lo + i].imag
            r2 += a[lo + i + 1].real
            r3 += a[lo + i + 1].imag
            r4 += a[lo + i + 2].real
            r5 += a[lo + i + 2].imag
            r6 += a[lo + i + 3].real
            r7 += a[lo + i + 3].imag
            i += 4
        rr = (r0 + r2) + (r4 + r6)
        ri = (r1 + r3) + (r5 + r7)
        while i < n:
            rr += a[lo + i].real
            ri += a[lo + i].imag
            i += 1
        return rr, ri
    # NumPy halves the 2n scalars and rounds down to a multiple of 8 scalars (4 values)
    h = (n - n % 8) // 2
    ar, ai = _pairwise_sum_complex(a, lo, h)
    br, bi = _pairwise_sum_complex(a, lo + h, n - h)
    return ar + br, ai + bi


def _run_sum(a, lo, n):
    """The pairwise sum of a[lo:lo+n] in NumPy's order for a's dtype (compiled code picks
    the real or complex version by type)."""
    if np.iscomplexobj(a):
        return complex(*_pairwise_sum_complex(a, lo, n))
    return _pairwise_sum(a, lo, n)


@overload(_run_sum, jit_options=_JIT)
def _run_sum_typed(a, lo, n):
    if isinstance(a.dtype, types.Complex):
        def complex_sum(a, lo, n):
            rr, ri = _pairwise_sum_complex(a, lo, n)
            return complex(rr, ri)
        return complex_sum
    return lambda a, lo, n: _pairwise_sum(a, lo, n)


@numba.njit(**_JIT)
def sum_like_into(x, out):
    """``out = sum_to_shape(x, out.shape)``: sums x over its leading dims and over the dims
    where out has 1 and x does not (the adjoint of broadcasting), in x's dtype.

    Float results reproduce NumPy's order: the maximal trailing run of reduced (or size-1)
    dims is summed pairwise like ``np.add.reduce`` and added into out; everything else is
    added sequentially in C order. (Checked bit for bit against NumPy 2 up to 1e5-element runs.)"""
    nd = x.ndim
    lead = nd - out.ndim
    of = out.reshape(out.size)
    of[:] = 0
    if x.size == 0:
        return
    xf = x.reshape(x.size)
    # trailing run: dims from the end that are reduced or of size 1
    cut = nd
    while cut > 0:
        d = cut - 1
        xd = x.shape[d]
        if xd == 1 or d < lead or out.shape[d - lead] == 1:
            cut -= 1
        else:
            break
    run = _prod(x.shape, cut, nd)
    nouter = x.size // run
    for j in range(nouter):
        # out flat index of the outer position j (over x dims [0, cut))
        rem = j
        dst = 0
        mul = 1
        for d in range(cut - 1, -1, -1):
            xd = x.shape[d]
            idx = rem % xd
            rem //= xd
            if d >= lead:
                od = out.shape[d - lead]
                if od != 1:
                    dst += idx * mul
                mul *= od
        if run == 1:
            of[dst] += xf[j]
        else:
            of[dst] += _run_sum(xf, j * run, run)


@numba.njit(**_JIT)
def broadcast_dim(a, b):
    """The broadcast of two dims known only at run time (ValueError when they differ and
    neither is 1)."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("Incompatible shapes for broadcasting")
