"""Pooling primitives over channels-last tensors ``(batch, *spatial, channels)`` with one to
three spatial dims: ``max_pool``, ``avg_pool`` and the gradient ops their VJPs use
(``max_pool_grad``, ``max_pool_grad_grad``, ``avg_pool_grad``).

Every op takes the window ``ksize``, the ``strides`` and explicit ``padding`` ((before, after)
per spatial dim), all over the spatial dims only; the frontend resolves TensorFlow's
``"SAME"``/``"VALID"`` into pairs. Padded positions never count: ``max_pool`` ignores them and
``avg_pool`` divides each window's sum by its number of real elements (TensorFlow's rule for
SAME). ``max_pool_grad`` routes each window's gradient to the window's first maximal element
(row-major window order), as TensorFlow's CPU kernel does; ``max_pool_grad_grad`` reads a
tensor of the input's shape at those same positions (the adjoint of that routing).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

POOL_ATTRS = ("ksize", "strides", "padding")


def pool_output_dims(op: str, shape, ksize, strides, padding):
    """The output shape of pooling ``shape`` (batch, *spatial, channels), checking the
    attributes; unknown spatial dims stay unknown.

    >>> pool_output_dims("max_pool", (2, 5, 5, 3), (2, 2), (2, 2), ((0, 0), (0, 0)))
    (2, 2, 2, 3)
    """
    nd = len(ksize)
    if not 1 <= nd <= 3 or len(strides) != nd or len(padding) != nd:
        raise fail(op, f"ksize {tuple(ksize)}, strides {tuple(strides)} and padding "
                       f"{tuple(padding)} must each have one entry per spatial dimension (1 to 3).")
    if any(k < 1 for k in ksize) or any(s < 1 for s in strides):
        raise fail(op, f"the window sizes {tuple(ksize)} and strides {tuple(strides)} must be "
                       f"positive.")
    for (lo, hi), k in zip(padding, ksize):
        if lo < 0 or hi < 0 or lo >= k or hi >= k:
            raise fail(op, f"padding {tuple(padding)} must be non-negative and smaller than the "
                           f"window {tuple(ksize)} on each side.")
    if shape is None:
        return None
    if len(shape) != nd + 2:
        raise fail(op, f"the input has shape {format_dims(shape)} but a {nd}-D pooling window "
                       f"needs a rank-{nd + 2} input (batch, {nd} spatial dims, channels).")
    out = [shape[0]]
    for i, (d, k, s, (lo, hi)) in enumerate(zip(shape[1:-1], ksize, strides, padding)):
        if d is None:
            out.append(None)
            continue
        if d + lo + hi < k:
            raise fail(op, f"Computed output size would be negative: spatial dimension {i} of "
                           f"the input {format_dims(shape)} has size {d} (padded {d + lo + hi}), "
                           f"smaller than the window size {k}. Use padding='SAME' or a smaller "
                           f"window.")
        out.append((d + lo + hi - k) // s + 1)
    return tuple(out + [shape[-1]])


def _pool_infer(op, dtypes):
    def infer(types, ksize, strides, padding):
        d = check_unified(op, ("input",), types, (0,), dtypes)
        return [TensorType(d, pool_output_dims(op, types[0].shape, ksize, strides, padding))]
    return infer


def _padded(x, padding, fill):
    pads = ((0, 0),) + tuple(tuple(p) for p in padding) + ((0, 0),)
    return np.pad(x, pads, constant_values=fill) if any(map(any, padding)) else x


def _windows(xp, ksize, strides, out_spatial):
    """(batch, *out_spatial, channels, *ksize): the window of every output position."""
    nd = len(ksize)
    w = sliding_window_view(xp, tuple(ksize), axis=tuple(range(1, nd + 1)))
    index = (slice(None),) + tuple(slice(0, o * s, s) if o else slice(0, 0)
                                   for o, s in zip(out_spatial, strides))
    return w[index]


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_kernel(x, ksize, strides, padding):
    out = pool_output_dims("max_pool", x.shape, ksize, strides, padding)
    w = _windows(_padded(x, padding, _lowest(x.dtype)), ksize, strides, out[1:-1])
    return np.max(w, axis=tuple(range(-len(ksize), 0))).astype(x.dtype, copy=False) \
        if w.size else np.zeros(out, x.dtype)


def window_counts(spatial, ksize, strides, padding, out_spatial):
    """The number of real (unpadded) elements in each output window, shape ``out_spatial``
    (the divisor of ``avg_pool``).

    >>> window_counts((3,), (2,), (1,), ((0, 1),), (3,)).tolist()
    [2.0, 2.0, 1.0]
    """
    counts = np.ones((), np.float64)
    for d, k, s, (lo, _), o in zip(spatial, ksize, strides, padding, out_spatial):
        start = np.arange(o) * s - lo
        c = np.minimum(start + k, d) - np.maximum(start, 0)
        counts = np.multiply.outer(counts, c.astype(np.float64))
    return counts


def _avg_pool_kernel(x, ksize, strides, padding):
    out = pool_output_dims("avg_pool", x.shape, ksize, strides, padding)
    w = _windows(_padded(x, padding, 0), ksize, strides, out[1:-1])
    total = np.sum(w, axis=tuple(range(-len(ksize), 0)), dtype=x.dtype)
    counts = window_counts(x.shape[1:-1], ksize, strides, padding, out[1:-1])
    return (total / counts[..., None].astype(x.dtype)).astype(x.dtype, copy=False)


def _argmax_positions(x, ksize, strides, padding):
    """Flat positions in the padded input of each window's first maximum, with the padded
    shape (padding never wins: it holds the lowest value, and real elements come first
    among equals only when they are earlier in the window, which TF's rule also asks)."""
    out = pool_output_dims("max_pool_grad", x.shape, ksize, strides, padding)
    xp = _padded(x, padding, _lowest(x.dtype))
    nd = len(ksize)
    w = _windows(xp, ksize, strides, out[1:-1])
    flat = w.reshape(w.shape[:nd + 2] + (-1,))
    arg = np.argmax(flat, axis=-1) if flat.size else np.zeros(flat.shape[:-1], np.intp)
    offsets = np.unravel_index(arg, tuple(ksize))
    grids = np.indices(out, sparse=True)
    coords = [grids[0]] + [grids[i + 1] * strides[i] + offsets[i] for i in range(nd)] + \
        [grids[-1]]
    return np.ravel_multi_index(coords, xp.shape), xp.shape, out


def _crop(xp, padding):
    index = (slice(None),) + tuple(slice(lo, xp.shape[i + 1] - hi)
                                   for i, (lo, hi) in enumerate(padding)) + (slice(None),)
    return xp[index]


def _max_pool_grad_kernel(x, dy, ksize, strides, padding):
    pos, padded_shape, _ = _argmax_positions(x, ksize, strides, padding)
    total = np.bincount(pos.ravel(), weights=dy.ravel().astype(np.float64),
                        minlength=int(np.prod(padded_shape)))
    return np.ascontiguousarray(_crop(total.reshape(padded_shape), padding).astype(x.dtype))


def _max_pool_grad_grad_kernel(x, g, ksize, strides, padding):
    pos, _, out = _argmax_positions(x, ksize, strides, padding)
    gp = _padded(g, padding, 0).ravel()
    return gp[pos].reshape(out).astype(x.dtype, copy=False)


def _avg_pool_grad_kernel(dy, ksize, strides, padding, input_shape):
    input_shape = (dy.shape[0],) + tuple(input_shape[1:])  # the batch may be left None
    out_spatial = dy.shape[1:-1]
    counts = window_counts(input_shape[1:-1], ksize, strides, padding, out_spatial)
    share = dy / counts[..., None].astype(dy.dtype)
    padded = [input_shape[0]] + [d + lo + hi for d, (lo, hi) in
                                 zip(input_shape[1:-1], padding)] + [input_shape[-1]]
    dxp = np.zeros(padded, dy.dtype)
    for offset in np.ndindex(*ksize):  # one strided add per window position
        index = (slice(None),) + tuple(slice(w, w + o * s, s) if o else slice(0, 0)
                                       for w, o, s in zip(offset, out_spatial, strides))
        dxp[index] += share
    return np.ascontiguousarray(_crop(dxp, padding))


def _check_grad_shapes(op, types, ksize, strides, padding, x_name):
    """``dy``/``grad`` must have the pooled shape of ``x``."""
    out = pool_output_dims(op, types[0].shape, ksize, strides, padding)
    dy = types[1].shape
    if out is not None and dy is not None and (len(dy) != len(out) or any(
            a is not None and b is not None and a != b for a, b in zip(out, dy))):
        raise fail(op, f"'{x_name}' has shape {format_dims(dy)} but pooling the input of shape "
                       f"{format_dims(types[0].shape)} gives {format_dims(out)}; they must "
                       f"match.")
    return out


def _max_pool_grad_infer(types, ksize, strides, padding):
    d = check_unified("max_pool_grad", ("orig_input", "grad"), types, (0, 1), dt.FLOATS)
    _check_grad_shapes("max_pool_grad", types, ksize, strides, padding, "grad")
    return [TensorType(d, types[0].shape)]


def _max_pool_grad_grad_infer(types, ksize, strides, padding):
    d = check_unified("max_pool_grad_grad", ("orig_input", "grad"), types, (0, 1), dt.FLOATS)
    x, g = types[0].shape, types[1].shape
    if x is not None and g is not None and x != g:
        raise fail("max_pool_grad_grad", f"'grad' has shape {format_dims(g)} but it must have "
                                         f"the input's shape {format_dims(x)}.")
    return [TensorType(d, pool_output_dims("max_pool_grad_grad", x, ksize, strides, padding))]


def _avg_pool_grad_infer(types, ksize, strides, padding, input_shape):
    d = check_unified("avg_pool_grad", ("grad",), types, (0,), dt.FLOATS)
    g = types[0].shape
    if any(v is None for v in input_shape[1:]):
        raise fail("avg_pool_grad", f"input_shape {tuple(input_shape)} must be known except "
                                    f"for the batch size.")
    batch = input_shape[0] if input_shape[0] is not None else (None if g is None else g[0])
    shape = (batch,) + tuple(int(v) for v in input_shape[1:])
    out = pool_output_dims("avg_pool_grad", shape, ksize, strides, padding)
    if g is not None and (len(g) != len(out) or any(
            a is not None and b is not None and a != b for a, b in zip(g, out))):
        raise fail("avg_pool_grad", f"'grad' has shape {format_dims(g)} but pooling an input of "
                                    f"shape {format_dims(shape)} gives {format_dims(out)}; they "
                                    f"must match.")
    return [TensorType(d, shape)]


# (input shape, ksize, strides, padding): VALID, SAME-like padding, overlapping windows, 1-3 D
_CASES = [
    ((2, 5, 3), (2,), (2,), ((0, 1),)),
    ((1, 4, 5, 2), (2, 2), (2, 2), ((0, 0), (0, 1))),
    ((2, 5, 4, 1), (3, 3), (2, 1), ((1, 1), (1, 1))),
    ((1, 3, 4, 3, 2), (2, 2, 2), (1, 2, 1), ((0, 0), (0, 0), (1, 0))),
]


def _attrs(k, s, p):
    return {"ksize": k, "strides": s, "padding": p}


def _pool_examples(rng, d):
    return [Example((values(rng, d, shape, -5, 5),), _attrs(k, s, p))
            for shape, k, s, p in _CASES]


def _out(shape, k, s, p):
    return pool_output_dims("pool", shape, k, s, p)


def _distinct(rng, d, shape):
    """Values with no ties (a permutation), so finite differences of max pooling are clean."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.1 - n * 0.05).astype(d.np)


max_pool_op = OpDef(
    name="max_pool", kind=Kind.REDUCE, inputs=("input",), attrs=POOL_ATTRS,
    infer=_pool_infer("max_pool", dt.NUMERIC), kernel=_max_pool_kernel, dtypes=dt.NUMERIC,
    unify=(0,),
    examples=lambda rng, d: [Example((_distinct(rng, d, shape) if d.is_floating else
                                      values(rng, d, shape, -5, 5),), _attrs(k, s, p))
                             for shape, k, s, p in _CASES],
    doc="The maximum of each window of a channels-last input (padding ignored).")

avg_pool_op = OpDef(
    name="avg_pool", kind=Kind.REDUCE, inputs=("input",), attrs=POOL_ATTRS,
    infer=_pool_infer("avg_pool", dt.FLOATS), kernel=_avg_pool_kernel, dtypes=dt.FLOATS,
    unify=(0,), examples=_pool_examples,
    doc="The mean of each window of a channels-last input over its real (unpadded) elements.")

max_pool_grad_op = OpDef(
    name="max_pool_grad", kind=Kind.REDUCE, inputs=("orig_input", "grad"), attrs=POOL_ATTRS,
    infer=_max_pool_grad_infer, kernel=_max_pool_grad_kernel, dtypes=dt.FLOATS, unify=(0, 1),
    examples=lambda rng, d: [Example((_distinct(rng, d, shape),
                                      values(rng, d, _out(shape, k, s, p))), _attrs(k, s, p))
                             for shape, k, s, p in _CASES],
    doc="The gradient of max_pool: each window's `grad` added at the window's first maximum "
        "of `orig_input`.")

max_pool_grad_grad_op = OpDef(
    name="max_pool_grad_grad", kind=Kind.REDUCE, inputs=("orig_input", "grad"),
    attrs=POOL_ATTRS, infer=_max_pool_grad_grad_infer, kernel=_max_pool_grad_grad_kernel,
    dtypes=dt.FLOATS, unify=(0, 1),
    examples=lambda rng, d: [Example((_distinct(rng, d, shape), values(rng, d, shape)),
                                     _attrs(k, s, p)) for shape, k, s, p in _CASES],
    doc="`grad` (shaped like `orig_input`) read at each window's first maximum of "
        "`orig_input`: the adjoint of max_pool_grad in its gradient argument.")

avg_pool_grad_op = OpDef(
    name="avg_pool_grad", kind=Kind.REDUCE, inputs=("grad",), attrs=POOL_ATTRS +
    ("input_shape",), infer=_avg_pool_grad_infer, kernel=_avg_pool_grad_kernel, dtypes=dt.FLOATS,
    unify=(0,),
    examples=lambda rng, d: [Example((values(rng, d, _out(shape, k, s, p)),),
                                     {**_attrs(k, s, p), "input_shape": (None,) * (i == 0) +
                                      shape[i == 0:]})
                             for i, (shape, k, s, p) in enumerate(_CASES)],
    doc="The gradient of avg_pool: each window's `grad` divided by its number of real "
        "elements and spread over them, into a tensor of `input_shape` (whose batch size may "
        "be None: `grad`'s is used).")
