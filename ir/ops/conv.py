"""Convolution primitives, channels-last, 1 to 3 spatial dimensions in one definition.

* ``conv(x, filters)``: ``x`` is ``[N, *spatial, C_in]``, ``filters`` is
  ``[*kernel, C_in / groups, C_out]``; the output is ``[N, *out, C_out]`` with
  ``out[n, *o, g*Og + j] = sum_{k, c} xpad[n, *(o*stride + k*dilation), g*Cg + c] *
  filters[*k, c, g*Og + j]`` (``Og = C_out / groups``, ``Cg = C_in / groups``).
* ``conv_backprop_input(filters, dy)``: the adjoint of ``conv`` in ``x`` (``input_shape``
  gives ``x``'s shape; its batch entry may be None, the batch comes from ``dy``).
* ``conv_backprop_filter(x, dy)``: the adjoint of ``conv`` in ``filters``.

Attributes shared by the three: ``strides`` and ``dilations`` (one int per spatial dim),
``padding`` (one explicit ``(before, after)`` pair per spatial dim; the frontend resolves
"SAME"/"VALID" with TensorFlow's rule) and ``groups``.

The NumPy kernels are im2col + one BLAS matmul (a batched one over groups) and col2im as one
strided add per kernel offset, so strided convolutions waste no work on inserted zeros.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

CONV_ATTRS = ("strides", "dilations", "padding", "groups")


# ---------------------------------------------------------------------- shape rules

def output_size(size: int | None, k: int | None, stride: int, dilation: int,
                pad: tuple[int, int]) -> int | None:
    """One spatial dimension of the output (None when the input or kernel size is unknown)."""
    if size is None or k is None:
        return None
    # TensorFlow's (padded - effective_filter + stride) / stride, truncating toward zero.
    num = size + pad[0] + pad[1] - (k - 1) * dilation - 1 + stride
    return num // stride if num >= 0 else -(-num // stride)


def _check_attrs(op: str, rank: int, strides, dilations, padding, groups) -> None:
    for name, v in (("strides", strides), ("dilations", dilations), ("padding", padding)):
        if len(v) != rank:
            raise fail(op, f"'{name}' has {len(v)} entries but the convolution has {rank} "
                           f"spatial dimension(s); give one entry per spatial dimension.")
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
        raise fail(op, f"strides {tuple(strides)} and dilations {tuple(dilations)} must all "
                       f"be >= 1.")
    if any(len(p) != 2 or p[0] < 0 or p[1] < 0 for p in padding):
        raise fail(op, f"padding {tuple(padding)} must be one (before, after) pair of "
                       f"non-negative ints per spatial dimension.")
    if groups < 1:
        raise fail(op, f"groups must be >= 1, got {groups}.")


def conv_shapes(op: str, x, w, strides, dilations, padding, groups):
    """Checks the shapes of a convolution of ``x`` with filters ``w`` (either may be None for
    an unknown rank, dims may be None) and returns the output shape (or None)."""
    if x is None or w is None:
        return None
    r = len(x) - 2
    if not 1 <= r <= 3:
        raise fail(op, f"the input must have rank 3, 4 or 5 ([batch, *spatial, channels]), "
                       f"got shape {format_dims(x)}.")
    if len(w) != r + 2:
        raise fail(op, f"the filters must have rank {r + 2} ([*kernel, in_channels, "
                       f"out_channels]) for an input of shape {format_dims(x)}, got "
                       f"{format_dims(w)}.")
    _check_attrs(op, r, strides, dilations, padding, groups)
    c, cg, o = x[-1], w[-2], w[-1]
    if c is not None and cg is not None and c != cg * groups:
        raise fail(op, f"the input has {c} channels (dimension {r + 1} of "
                       f"{format_dims(x)}) but the filters' in_channels (dimension {r} of "
                       f"{format_dims(w)}) is {cg} with groups={groups}; in_channels * groups "
                       f"must equal the input's channels.")
    if o is not None and o % groups:
        raise fail(op, f"the filters' out_channels {o} (last dimension of {format_dims(w)}) "
                       f"must be divisible by groups={groups}.")
    out = []
    for i in range(r):
        n = output_size(x[1 + i], w[i], strides[i], dilations[i], padding[i])
        if n is not None and n < 0:
            eff = (w[i] - 1) * dilations[i] + 1
            raise fail(op, f"Computed output size would be negative: {n} [input_size: "
                           f"{x[1 + i] + sum(padding[i])} (padded), effective_filter_size: "
                           f"{eff}, stride: {strides[i]}] in spatial dimension {i}.")
        out.append(n)
    return (x[0], *out, o)


def _conv_infer(types, strides, dilations, padding, groups):
    d = check_unified("conv", ("input", "filters"), types, (0, 1), dt.FLOATS)
    return [TensorType(d, conv_shapes("conv", types[0].shape, types[1].shape, strides,
                                      dilations, padding, groups))]


def _check_dy(op: str, dy, expected) -> None:
    if dy is None or expected is None:
        return
    if len(dy) != len(expected) or any(a is not None and b is not None and a != b
                                       for a, b in zip(dy, expected)):
        raise fail(op, f"the output gradient has shape {format_dims(dy)} but the "
                       f"convolution's output has shape {format_dims(expected)}.")


def _backprop_input_infer(types, input_shape, strides, dilations, padding, groups):
    d = check_unified("conv_backprop_input", ("filters", "dy"), types, (0, 1), dt.FLOATS)
    if any(v is None for v in input_shape[1:]):
        raise fail("conv_backprop_input", f"input_shape {format_dims(input_shape)} must be "
                                          f"known except for the batch dimension.")
    dy = types[1].shape
    x = (None if dy is None else dy[0],) + tuple(input_shape[1:])
    out = conv_shapes("conv_backprop_input", x, types[0].shape, strides, dilations, padding,
                      groups)
    _check_dy("conv_backprop_input", dy, out)
    return [TensorType(d, x)]


def _backprop_filter_infer(types, filter_shape, strides, dilations, padding, groups):
    d = check_unified("conv_backprop_filter", ("input", "dy"), types, (0, 1), dt.FLOATS)
    out = conv_shapes("conv_backprop_filter", types[0].shape, tuple(filter_shape), strides,
                      dilations, padding, groups)
    _check_dy("conv_backprop_filter", types[1].shape, out)
    return [TensorType(d, tuple(filter_shape))]


# ---------------------------------------------------------------------- NumPy kernels

def _pad(x, padding):
    if not any(lo or hi for lo, hi in padding):
        return x
    return np.pad(x, ((0, 0), *padding, (0, 0)))


def _out_dims(x_shape, k_shape, strides, dilations, padding):
    return tuple(output_size(n, k, s, d, p) for n, k, s, d, p in
                 zip(x_shape[1:-1], k_shape, strides, dilations, padding))


def windows(x, k_shape, strides, dilations, padding):
    """A view ``[N, *out, *kernel, C]`` of the padded input: the patch under each output."""
    r = len(k_shape)
    out = _out_dims(x.shape, k_shape, strides, dilations, padding)
    xp = _pad(x, padding)
    eff = [(k - 1) * d + 1 for k, d in zip(k_shape, dilations)]
    v = sliding_window_view(xp, eff, axis=tuple(range(1, r + 1)))  # [N, *pos, C, *eff]
    sl = (slice(None),) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, strides))
    v = v[sl + (slice(None),) + tuple(slice(None, None, d) for d in dilations)]
    return np.moveaxis(v, r + 1, -1)


def _columns(x, k_shape, strides, dilations, padding):
    """im2col: ``[M, prod(kernel) * C]`` patches (M = N * prod(out)), C fastest."""
    width = math.prod(k_shape) * x.shape[-1]
    if 0 in _out_dims(x.shape, k_shape, strides, dilations, padding):
        return np.zeros((0, width), x.dtype)  # (no window fits: sliding_window_view refuses)
    return windows(x, k_shape, strides, dilations, padding).reshape(-1, width)


def _grouped(cols, kp, groups):
    """``[M, kp * C]`` columns -> ``[groups, M, kp * Cg]``."""
    m = cols.shape[0]
    return cols.reshape(m, kp, groups, -1).transpose(2, 0, 1, 3).reshape(groups, m, -1)


def _grouped_filters(w, groups):
    """``[*kernel, Cg, O]`` -> ``[groups, prod(kernel) * Cg, Og]``."""
    kc = math.prod(w.shape[:-1])
    return w.reshape(kc, groups, -1).transpose(1, 0, 2)


def _taps(k_shape):
    return itertools.product(*(range(k) for k in k_shape))


def _tap_slices(kk, dilations, out, strides):
    """The padded-input positions read by kernel tap ``kk`` for every output position."""
    return (slice(None),) + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                                  for k, d, o, s in zip(kk, dilations, out, strides))


def _depthwise(x, w, dy, strides, dilations, padding, mode):
    """Depthwise convolution (one input channel per group) one kernel tap at a time, each an
    elementwise multiply-add over strided views of the padded input (no im2col copy and no
    per-channel products): ``mode`` "conv" returns the output, "input" the input gradient
    given ``dy`` (``x`` then only gives the input's shape and dtype), "filter" the filter
    gradient given ``dy``."""
    r = x.ndim - 2
    k_shape, c = w.shape[:r], x.shape[-1]
    mult = w.shape[-1] // c
    out = _out_dims(x.shape, k_shape, strides, dilations, padding)
    lead = (x.shape[0], *out)
    wt = w.reshape(math.prod(k_shape), c, mult)
    xp = _pad(x, padding) if mode != "input" else np.zeros(
        (x.shape[0], *(n + lo + hi for n, (lo, hi) in zip(x.shape[1:-1], padding)), c), x.dtype)
    acc = np.zeros(lead + (c, mult), x.dtype) if mode == "conv" else None
    dw = np.zeros_like(wt) if mode == "filter" else None
    g = None if dy is None else dy.reshape(lead + (c, mult))
    for t, kk in enumerate(_taps(k_shape)):
        view = xp[_tap_slices(kk, dilations, out, strides)]
        if mode == "conv":
            acc += view[..., None] * wt[t]
        elif mode == "input":
            view += (g * wt[t]).sum(axis=-1)
        else:
            lead_axes = "abcd"[:r + 1]
            dw[t] = np.einsum(f"{lead_axes}x,{lead_axes}xm->xm", view, g)
    if mode == "conv":
        return acc.reshape(lead + (c * mult,))
    if mode == "filter":
        return dw.reshape(w.shape)
    crop = tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[1:-1], padding))
    return np.ascontiguousarray(xp[(slice(None),) + crop])


def _is_depthwise(w, groups) -> bool:
    return groups > 1 and w.shape[-2] == 1


def conv_kernel(x, w, strides, dilations, padding, groups):
    if _is_depthwise(w, groups) and 0 not in _out_dims(x.shape, w.shape[:-2], strides,
                                                       dilations, padding):
        return _depthwise(x, w, None, strides, dilations, padding, "conv")
    r = x.ndim - 2
    out = _out_dims(x.shape, w.shape[:r], strides, dilations, padding)
    cols = _columns(x, w.shape[:r], strides, dilations, padding)
    o = w.shape[-1]
    if groups == 1:
        y = cols @ w.reshape(-1, o)
    else:
        y = np.matmul(_grouped(cols, math.prod(w.shape[:r]), groups), _grouped_filters(w, groups))
        y = y.transpose(1, 0, 2)
    return np.ascontiguousarray(y.reshape((x.shape[0], *out, o)), dtype=x.dtype)


def conv_backprop_filter_kernel(x, dy, filter_shape, strides, dilations, padding, groups):
    if groups > 1 and filter_shape[-2] == 1 and dy.size:
        return _depthwise(x, np.zeros(filter_shape, x.dtype), dy, strides, dilations, padding,
                          "filter")
    r = x.ndim - 2
    k_shape = tuple(filter_shape[:r])
    cols = _columns(x, k_shape, strides, dilations, padding)
    dy2 = dy.reshape(-1, dy.shape[-1])
    if groups == 1:
        dw = cols.T @ dy2
    else:
        g = _grouped(cols, math.prod(k_shape), groups)                  # [G, M, kp*Cg]
        dyg = dy2.reshape(dy2.shape[0], groups, -1).transpose(1, 0, 2)  # [G, M, Og]
        dw = np.matmul(g.transpose(0, 2, 1), dyg).transpose(1, 0, 2)    # [kp*Cg, G, Og]
    return np.ascontiguousarray(dw.reshape(tuple(filter_shape)), dtype=x.dtype)


def col2im(dcols, x_shape, k_shape, strides, dilations, padding, dtype):
    """The adjoint of :func:`windows`: ``dcols [N, *out, *kernel, C]`` summed into an input of
    shape ``x_shape`` (one strided add per kernel offset)."""
    r = len(k_shape)
    out = dcols.shape[1:1 + r]
    padded = [n + lo + hi for n, (lo, hi) in zip(x_shape[1:-1], padding)]
    dxp = np.zeros((x_shape[0], *padded, x_shape[-1]), dtype)
    for kk in () if 0 in out else itertools.product(*(range(k) for k in k_shape)):
        dst = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                    for k, d, o, s in zip(kk, dilations, out, strides))
        dxp[(slice(None),) + dst] += dcols[(slice(None),) * (1 + r) + kk]
    crop = tuple(slice(lo, lo + n) for n, (lo, _) in zip(x_shape[1:-1], padding))
    return np.ascontiguousarray(dxp[(slice(None),) + crop])


def conv_backprop_input_kernel(w, dy, input_shape, strides, dilations, padding, groups):
    if _is_depthwise(w, groups) and dy.size:
        like = np.broadcast_to(np.zeros((), w.dtype), (dy.shape[0], *input_shape[1:]))
        return _depthwise(like, w, dy, strides, dilations, padding, "input")
    r = w.ndim - 2
    k_shape = w.shape[:r]
    kp, o = math.prod(k_shape), w.shape[-1]
    dy2 = dy.reshape(-1, o)
    m = dy2.shape[0]
    if groups == 1:
        dcols = dy2 @ w.reshape(-1, o).T                                  # [M, kp*C]
    else:
        dyg = dy2.reshape(m, groups, -1).transpose(1, 0, 2)               # [G, M, Og]
        dc = np.matmul(dyg, _grouped_filters(w, groups).transpose(0, 2, 1))  # [G, M, kp*Cg]
        dcols = dc.reshape(groups, m, kp, -1).transpose(1, 2, 0, 3)      # [M, kp, G, Cg]
    x_shape = (dy.shape[0],) + tuple(input_shape[1:])
    dcols = dcols.reshape(dy.shape[:-1] + tuple(k_shape) + (x_shape[-1],))
    return col2im(dcols, x_shape, k_shape, strides, dilations, padding, w.dtype)


# ---------------------------------------------------------------------- examples

# (x shape, filter shape, strides, dilations, padding, groups)
_CASES = [
    ((1, 5, 5, 2), (3, 3, 2, 3), (1, 1), (1, 1), ((1, 1), (1, 1)), 1),
    ((2, 7, 2), (3, 1, 4), (2,), (2,), ((0, 1),), 2),
    ((1, 3, 4, 3, 2), (2, 2, 1, 1, 2), (1, 2, 1), (1, 1, 2), ((0, 0), (1, 0), (0, 1)), 2),
]


def _attrs(case):
    return dict(zip(CONV_ATTRS, case[2:]))


def _conv_examples(rng, d):
    return [Example((values(rng, d, c[0]), values(rng, d, c[1])), _attrs(c)) for c in _CASES]


def _dy_shape(case):
    x, w = case[0], case[1]
    return conv_shapes("conv", x, w, *case[2:])


def _backprop_input_examples(rng, d):
    return [Example((values(rng, d, c[1]), values(rng, d, _dy_shape(c))),
                    {"input_shape": c[0], **_attrs(c)}) for c in _CASES]


def _backprop_filter_examples(rng, d):
    return [Example((values(rng, d, c[0]), values(rng, d, _dy_shape(c))),
                    {"filter_shape": c[1], **_attrs(c)}) for c in _CASES]


conv_op = OpDef(
    name="conv", kind=Kind.LINALG, inputs=("input", "filters"), attrs=CONV_ATTRS,
    infer=_conv_infer, kernel=conv_kernel, dtypes=dt.FLOATS, unify=(0, 1),
    examples=_conv_examples, copying=True,
    doc="N-D (1-3 spatial dims) channels-last convolution (cross-correlation, as in TF) with "
        "strides, dilations, explicit padding pairs and feature groups.")

conv_backprop_input_op = OpDef(
    name="conv_backprop_input", kind=Kind.LINALG, inputs=("filters", "dy"),
    attrs=("input_shape",) + CONV_ATTRS, infer=_backprop_input_infer,
    kernel=conv_backprop_input_kernel, dtypes=dt.FLOATS, unify=(0, 1),
    examples=_backprop_input_examples, copying=True,
    doc="The gradient of conv with respect to its input (a transposed convolution).")

conv_backprop_filter_op = OpDef(
    name="conv_backprop_filter", kind=Kind.LINALG, inputs=("input", "dy"),
    attrs=("filter_shape",) + CONV_ATTRS, infer=_backprop_filter_infer,
    kernel=conv_backprop_filter_kernel, dtypes=dt.FLOATS, unify=(0, 1),
    examples=_backprop_filter_examples, copying=True,
    doc="The gradient of conv with respect to its filters.")
