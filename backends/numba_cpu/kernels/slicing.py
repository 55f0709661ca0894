"""Numba kernels for ``strided_slice`` and ``strided_slice_grad`` (``ir/ops/slicing.py``).

Two stages:

1. **Generation time** (plain Python): :func:`slice_plan` turns the static ``spec`` and the
   input rank (plus whatever dims are statically known) into a :class:`SlicePlan`. Its ``code``
   is a flat tuple of ints (7 per input dim) that the generator writes into the source as a
   literal; ``out_dims`` says how the output shape is built from the per-dim lengths (dropped
   dims for integer indices, inserted 1s for newaxis); ``shape_expr`` writes that as source.
2. **Run time** (njit): :func:`slice_bounds` normalizes the plan against the actual shape and
   the dynamic ``"$k"`` bounds (Python ``slice.indices`` semantics, negative indices wrap,
   out-of-range integer indices raise IndexError, step 0 raises ValueError) giving int64 arrays
   ``starts, steps, lens``; the generator allocates ``out`` with ``plan.shape_expr("lens")`` and
   calls :func:`strided_slice_into` / :func:`strided_slice_grad_into`.

Generated code, for ``x[i, 1:, np.newaxis]`` with i = "$0"::

    starts, steps, lens = K.slice_bounds(x.shape, (1,2,0,...), np.array([i0[()]], np.int64))
    out = np.empty((lens[1], 1), np.float32)
    K.strided_slice_into(x, out, starts, steps, lens)

``dyn`` is always a 1-D int64 array (``np.empty(0, np.int64)`` when there are no "$k"
bounds). ``x``, ``g`` and ``out`` must be C-contiguous.
"""
from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

_JIT = dict(cache=True, error_model="numpy", nogil=True)

# per input dim: KIND, START_MODE, START, STOP_MODE, STOP, STEP_MODE, STEP
# KIND: 0 slice, 1 integer index (the dim is dropped; START is the index)
# MODE: 0 None (default), 1 constant, 2 dynamic (the value is k of "$k": dyn[k])
FIELDS = 7
_NONE, _CONST, _DYN = 0, 1, 2


class SlicePlan(NamedTuple):
    ndim: int                    # input rank
    code: tuple                  # FIELDS ints per input dim, for slice_bounds
    out_dims: tuple              # per output dim: input dim d (length lens[d]) or -1 (newaxis)
    out_shape: tuple             # static output dims (None where only known at run time)
    ndyn: int                    # number of "$k" bounds the spec uses

    def shape_expr(self, lens: str) -> str:
        """Source text of the output shape tuple in terms of the ``lens`` array variable."""
        parts = ["1" if d < 0 else f"{lens}[{d}]" for d in self.out_dims]
        return "(" + "".join(p + ", " for p in parts) + ")" if len(parts) == 1 else \
            "(" + ", ".join(parts) + ")"


def _enc(v) -> tuple:
    if v is None:
        return (_NONE, 0)
    if isinstance(v, str):
        return (_DYN, int(v[1:]))
    return (_CONST, int(v))


def slice_plan(shape, spec: tuple) -> SlicePlan:
    """Plain Python, at generation time. ``shape``: the input's static dims (ints or None; only
    its length, the rank, is required). ``spec``: the op's ``spec`` attribute."""
    shape = tuple(shape)
    ndim = len(shape)
    consumed = sum(1 for it in spec if it[0] in ("index", "slice"))
    if consumed > ndim:
        raise IndexError(f"too many indices ({consumed}) for a tensor of rank {ndim}")
    if sum(1 for it in spec if it[0] == "ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    full = (0, _NONE, 0, _NONE, 0, _NONE, 0)
    code, out_dims, ndyn = [], [], 0
    dim = 0
    for item in spec:
        tag = item[0]
        if tag == "newaxis":
            out_dims.append(-1)
        elif tag == "ellipsis":
            for _ in range(ndim - consumed):
                code.extend(full)
                out_dims.append(dim)
                dim += 1
        elif tag == "index":
            m, v = _enc(item[1])
            code.extend((1, m, v, _NONE, 0, _NONE, 0))
            ndyn = max(ndyn, v + 1) if m == _DYN else ndyn
            dim += 1
        else:
            start, stop, step = item[1:]
            if step == 0:
                raise ValueError("slice step cannot be zero")
            enc = [_enc(start), _enc(stop), _enc(step)]
            code.append(0)
            for m, v in enc:
                code.extend((m, v))
                ndyn = max(ndyn, v + 1) if m == _DYN else ndyn
            out_dims.append(dim)
            dim += 1
    while dim < ndim:
        code.extend(full)
        out_dims.append(dim)
        dim += 1
    # static output dims where everything is known
    out_shape = []
    for d in out_dims:
        if d < 0:
            out_shape.append(1)
            continue
        c = code[d * FIELDS:(d + 1) * FIELDS]
        n = shape[d]
        if n is None or _DYN in (c[1], c[3], c[5]):
            out_shape.append(None)
        else:
            vals = [c[2] if c[1] else None, c[4] if c[3] else None, c[6] if c[5] else None]
            out_shape.append(len(range(*slice(*vals).indices(n))))
    return SlicePlan(ndim, tuple(code), tuple(out_dims), tuple(out_shape), ndyn)


@numba.njit(**_JIT)
def _value(code, base, dyn):
    mode = code[base]
    if mode == 2:
        return np.int64(dyn[code[base + 1]])
    return np.int64(code[base + 1])


@numba.njit(**_JIT)
def slice_bounds(shape, code, dyn):
    """Run time: (starts, steps, lens), int64 arrays of length rank, for ``x.shape``.

    Integer-indexed dims get (index, 1, 1). Raises IndexError for an integer index outside
    [-n, n) and ValueError for a zero step (the reference kernel's errors)."""
    nd = len(shape)
    starts = np.empty(nd, np.int64)
    steps = np.empty(nd, np.int64)
    lens = np.empty(nd, np.int64)
    for d in range(nd):
        b = d * 7
        n = np.int64(shape[d])
        if code[b] == 1:
            i = _value(code, b + 1, dyn)
            if i < 0:
                i += n
            if i < 0 or i >= n:
                raise IndexError("strided_slice: index out of bounds for its dimension")
            starts[d] = i
            steps[d] = 1
            lens[d] = 1
            continue
        step = np.int64(1)
        if code[b + 5] != 0:
            step = _value(code, b + 5, dyn)
        if step == 0:
            raise ValueError("strided_slice: slice step cannot be zero")
        if step > 0:
            lo = np.int64(0)
            hi = n
        else:
            lo = np.int64(-1)
            hi = n - 1
        if code[b + 1] == 0:
            start = lo if step > 0 else hi
        else:
            start = _value(code, b + 1, dyn)
            if start < 0:
                start += n
                if start < lo:
                    start = lo
            elif start > hi:
                start = hi
        if code[b + 3] == 0:
            stop = hi if step > 0 else lo
        else:
            stop = _value(code, b + 3, dyn)
            if stop < 0:
                stop += n
                if stop < lo:
                    stop = lo
            elif stop > hi:
                stop = hi
        if step > 0:
            ln = (stop - start + step - 1) // step if stop > start else 0
        else:
            ln = (start - stop - step - 1) // (-step) if start > stop else 0
        starts[d] = start
        steps[d] = step
        lens[d] = ln
    return starts, steps, lens


@numba.njit(**_JIT)
def _offsets(shape, starts, steps, lens):
    """Flat source offsets (C order) of the sliced lattice, in output order."""
    nd = len(shape)
    total = 1
    for d in range(nd):
        total *= lens[d]
    offs = np.empty(total, np.int64)
    if total == 0:
        return offs
    stride = np.empty(nd, np.int64)
    s = np.int64(1)
    for d in range(nd - 1, -1, -1):
        stride[d] = s
        s *= shape[d]
    idx = np.zeros(nd, np.int64)
    base = np.int64(0)
    for d in range(nd):
        base += starts[d] * stride[d]
    cur = base
    for j in range(total):
        offs[j] = cur
        # odometer increment
        d = nd - 1
        while d >= 0:
            idx[d] += 1
            cur += steps[d] * stride[d]
            if idx[d] < lens[d]:
                break
            cur -= steps[d] * stride[d] * idx[d]
            idx[d] = 0
            d -= 1
    return offs


@numba.njit(**_JIT)
def strided_slice_into(x, out, starts, steps, lens):
    """out (shape from ``plan.shape_expr``, x's dtype) = x[spec]."""
    offs = _offsets(x.shape, starts, steps, lens)
    xf = x.reshape(x.size)
    of = out.reshape(out.size)
    for j in range(offs.size):
        of[j] = xf[offs[j]]


@numba.njit(**_JIT)
def strided_slice_grad_into(g, out, starts, steps, lens):
    """out (shaped like ``like``, g's dtype) = zeros; out[spec] = g.

    ``starts, steps, lens`` come from ``slice_bounds(out.shape, code, dyn)``."""
    offs = _offsets(out.shape, starts, steps, lens)
    gf = g.reshape(g.size)
    of = out.reshape(out.size)
    of[:] = 0
    for j in range(offs.size):
        of[offs[j]] = gf[j]


@numba.njit(**_JIT)
def dims_text(dims):
    """``[4,3]``: TensorFlow's way of printing a shape, for error messages."""
    s = "["
    for d in range(dims.size):
        s += ("," if d else "") + str(dims[d])
    return s + "]"


@numba.njit(**_JIT)
def check_update_shape(value_dims, slice_dims):
    """Raises the reference kernel's ValueError unless the r-value has the slice's shape."""
    same = value_dims.size == slice_dims.size
    for d in range(min(value_dims.size, slice_dims.size)):
        same = same and value_dims[d] == slice_dims[d]
    if not same:
        raise ValueError("sliced l-value shape " + dims_text(slice_dims) + " does not match "
                         "r-value shape " + dims_text(value_dims) + ". Automatic broadcasting "
                         "not yet implemented.")


@numba.njit(**_JIT)
def strided_slice_update_into(x, value, out, starts, steps, lens):
    """out (shaped like x) = x with x[spec] = value (already checked to have the slice's shape).

    ``starts, steps, lens`` come from ``slice_bounds(x.shape, code, dyn)``."""
    offs = _offsets(x.shape, starts, steps, lens)
    of = out.reshape(out.size)
    of[:] = x.reshape(x.size)
    vf = value.reshape(value.size)
    for j in range(offs.size):
        of[offs[j]] = vf[j]
