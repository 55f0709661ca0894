"""Convolution kernels (im2col / col2im + BLAS) for the ``conv``, ``conv_backprop_input`` and
``conv_backprop_filter`` ops.

Every convolution is handled as 3-D: generated code views a channels-last input of 1 to 3
spatial dims as ``x5 [N, D, H, W, C]`` (unit dims in front) and the filters as
``w5 [KD, KH, KW, Cg, O]``, and passes the geometry as one tuple of ints
``(sd, sh, sw, rd, rh, rw, pd, ph, pw, groups)`` (strides, dilations, padding before; the
padding after only shows in the output size, which the caller passes or the kernel reads from
``dy``). The im2col matrix of group ``g`` holds ``[M, KD*KH*KW*Cg]`` (``M = N*OD*OH*OW``,
channels fastest); it is built a chunk of about 4 MiB of rows at a time into one reused buffer,
each chunk followed by its ``np.dot`` on contiguous 2-D blocks, which Numba sends to BLAS
(floats only, as the op table allows). A 1x1 convolution with stride 1 and no padding uses the
input as its own im2col matrix; a depthwise one (one input channel per group) runs direct
loops instead.
"""
from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def _pointwise(kshape, geom):
    """Whether im2col is the identity (1x1x1 kernel, stride 1, no padding)."""
    for i in range(3):
        if kshape[i] != 1 or geom[i] != 1 or geom[6 + i] != 0:
            return False
    return True


@_jit
def _taps(v, k, stride, rate, pad, size):
    """The kernel taps ``[f0, f1)`` of output position ``v`` that read inside ``[0, size)``."""
    start = v * stride - pad
    last = size - 1 - start
    if start >= 0 and last >= (k - 1) * rate:  # the whole window is inside (no divisions)
        return 0, k
    f0 = 0 if start >= 0 else (-start + rate - 1) // rate
    f1 = 0 if last < 0 else min(k, last // rate + 1)
    return f0, max(f0, f1)


@_jit
def _copy(src, s0, dst, d0, n, add):
    """``dst[d0:d0+n] = src[s0:s0+n]`` (``+=`` with ``add``). Unsigned offsets spare the
    negative-index checks, so LLVM vectorizes the loop (about 1.5x on short runs)."""
    a, b = np.uint64(s0), np.uint64(d0)
    if add:
        for q in range(np.uint64(n)):
            dst[b + q] += src[a + q]
    else:
        for q in range(np.uint64(n)):
            dst[b + q] = src[a + q]


@_jit
def _zero(dst, d0, n):
    b = np.uint64(d0)
    for q in range(np.uint64(n)):
        dst[b + q] = 0


@_jit
def _patch_copy(src, dst, kshape, geom, xshape, oshape, r0, r1, gstride, add):
    """The loops shared by im2col and col2im over flat buffers, for the output rows
    ``[r0, r1)`` (row ``r0`` at offset 0 of the columns, group ``g`` at ``g * gstride``): for
    every row and kernel tap, the input channels of each group. ``add``: False copies input ->
    columns (zeros in the padding); True adds columns -> input. With one group and no
    dilation along the width, the taps of a kernel row read one contiguous run of the input."""
    n, d, h, w, c = xshape
    kd, kh, kw = kshape
    od, oh, ow = oshape
    groups = geom[9]
    cg = c // groups
    width = kd * kh * kw * cg
    run = groups == 1 and geom[5] == 1
    v = r0 % ow  # the output position of row r0, then advanced with carries (no divisions)
    y = (r0 // ow) % oh
    z = (r0 // (ow * oh)) % od
    b = r0 // (ow * oh * od)
    for row in range(r0, r1):
        if row > r0:
            v += 1
            if v == ow:
                v = 0
                y += 1
                if y == oh:
                    y = 0
                    z += 1
                    if z == od:
                        z = 0
                        b += 1
        f0, f1 = _taps(v, kw, geom[2], geom[5], geom[8], w)
        ix0 = v * geom[2] + f0 * geom[5] - geom[8]
        for a in range(kd):
            iz = z * geom[0] + a * geom[3] - geom[6]
            for e in range(kh):
                iy = y * geom[1] + e * geom[4] - geom[7]
                k0 = (row - r0) * width + (a * kh + e) * kw * cg
                inside = 0 <= iz < d and 0 <= iy < h
                if not add and not (inside and f0 == 0 and f1 == kw):
                    # zeros where the taps fall into the padding
                    lo, hi = (f0, f1) if inside else (0, 0)
                    for g in range(groups):
                        base = g * gstride + k0
                        _zero(dst, base, lo * cg)
                        _zero(dst, base + hi * cg, (kw - hi) * cg)
                if not inside:
                    continue
                pos = (((b * d + iz) * h + iy) * w + ix0) * c
                if run:
                    at = k0 + f0 * c
                    if add:
                        _copy(src, at, dst, pos, (f1 - f0) * c, True)
                    else:
                        _copy(src, pos, dst, at, (f1 - f0) * c, False)
                    continue
                for f in range(f0, f1):
                    px = pos + (f - f0) * geom[5] * c
                    for g in range(groups):
                        col = g * gstride + k0 + f * cg
                        if add:
                            _copy(src, col, dst, px + g * cg, cg, True)
                        else:
                            _copy(src, px + g * cg, dst, col, cg, False)


# Rows of im2col per chunk: about this many bytes of columns, which stay in cache for the
# product that follows and are reused by every chunk (a whole-batch im2col buffer costs
# page faults and memory traffic on every call), but at least _MIN_ROWS for BLAS.
_CHUNK_BYTES = 1 << 22
_MIN_ROWS = 256


@_jit
def _chunk_rows(m, width, itemsize):
    return max(1, min(m, max(_MIN_ROWS, _CHUNK_BYTES // max(1, width * itemsize))))


@_jit
def _filters2(w):
    """``w5 [KD, KH, KW, Cg, O]`` as the 2-D ``[KD*KH*KW*Cg, O]``."""
    kd, kh, kw, cg, o = w.shape
    return w.reshape((kd * kh * kw * cg, o))


@_jit
def _split_columns(a, groups):
    """``[M, groups * k]`` (C-contiguous) -> contiguous ``[groups, M, k]`` (a view for one
    group)."""
    m, total = a.shape
    k = total // groups
    if groups == 1:
        return a.reshape((1, m, k))
    out = np.empty((groups, m, k), a.dtype)
    for g in range(groups):
        out[g] = a[:, g * k:(g + 1) * k]
    return out


@_jit
def _depthwise_tap(xs, ws, out, mult, mode):
    """One tap of :func:`_depthwise` over the channels (each branch a plain loop LLVM
    vectorizes; a channel multiplier of 1 runs over the channels directly)."""
    c = xs.shape[0]
    if mult == 1:
        if mode == 0:
            for q in range(c):
                out[q] += xs[q] * ws[q]
        elif mode == 1:
            for q in range(c):
                xs[q] += out[q] * ws[q]
        else:
            for q in range(c):
                ws[q] += xs[q] * out[q]
        return
    for ch in range(c):
        base = ch * mult
        if mode == 0:
            for t in range(mult):
                out[base + t] += xs[ch] * ws[base + t]
        elif mode == 1:
            acc = xs[ch]
            for t in range(mult):
                acc += out[base + t] * ws[base + t]
            xs[ch] = acc
        else:
            for t in range(mult):
                ws[base + t] += xs[ch] * out[base + t]


@_jit
def _depthwise(x, w, y, geom, mode):
    """Depthwise convolution (one input channel per group, ``O = C * mult``) by direct loops
    over the output positions and their in-bounds taps, the channels innermost (contiguous in
    all three arrays): ``x [N, D, H, W, C]``, ``w [KD, KH, KW, 1, O]``, ``y [N, OD, OH, OW, O]``.
    ``mode`` 0 accumulates the convolution into ``y``, 1 its input gradient (``y`` holding
    ``dy``) into ``x``, 2 its filter gradient into ``w``. Skips the per-group im2col copies and
    the many tiny matrix products of the grouped path."""
    n, d, h, wd, c = x.shape
    kd, kh, kw = w.shape[0], w.shape[1], w.shape[2]
    od, oh, ow, o = y.shape[1], y.shape[2], y.shape[3], y.shape[4]
    mult = o // c
    for b in range(n):
        for z in range(od):
            for yy in range(oh):
                for v in range(ow):
                    f0, f1 = _taps(v, kw, geom[2], geom[5], geom[8], wd)
                    out = y[b, z, yy, v]
                    for a in range(kd):
                        iz = z * geom[0] + a * geom[3] - geom[6]
                        if iz < 0 or iz >= d:
                            continue
                        for e in range(kh):
                            iy = yy * geom[1] + e * geom[4] - geom[7]
                            if iy < 0 or iy >= h:
                                continue
                            for f in range(f0, f1):
                                xs = x[b, iz, iy, v * geom[2] + f * geom[5] - geom[8]]
                                _depthwise_tap(xs, w[a, e, f, 0], out, mult, mode)


@_jit
def _is_depthwise(cg, geom):
    return cg == 1 and geom[9] > 1


@_jit
def conv5(x, w, geom, oshape):
    """``conv`` of ``x5`` with ``w5``; returns ``[N, OD, OH, OW, O]``."""
    n, c = x.shape[0], x.shape[4]
    kd, kh, kw, cg, o = w.shape
    groups = geom[9]
    full = (n, oshape[0], oshape[1], oshape[2], o)
    if _is_depthwise(cg, geom):
        y = np.zeros(full, x.dtype)
        _depthwise(x, w, y, geom, 0)
        return y
    w2 = _filters2(w)
    m = n * oshape[0] * oshape[1] * oshape[2]
    if groups == 1 and _pointwise((kd, kh, kw), geom):
        return np.dot(x.reshape((m, c)), w2).reshape(full)
    width = kd * kh * kw * cg
    rows = _chunk_rows(m, width, x.itemsize)
    cols = np.empty((groups, rows, width), x.dtype)
    out = np.empty((m, o), x.dtype)
    wg = _split_columns(w2, groups)
    og = o // groups
    xf = x.reshape(-1)
    for r0 in range(0, m, rows):
        r1 = min(m, r0 + rows)
        _patch_copy(xf, cols.reshape(-1), (kd, kh, kw), geom, x.shape, oshape, r0, r1,
                    rows * width, False)
        if groups == 1:
            np.dot(cols[0, :r1 - r0], w2, out[r0:r1])
        else:
            for g in range(groups):
                out[r0:r1, g * og:(g + 1) * og] = np.dot(cols[g, :r1 - r0], wg[g])
    return out.reshape(full)


@_jit
def conv_backprop_filter5(x, dy, fshape, geom):
    """``conv_backprop_filter``: ``dw5 [KD, KH, KW, Cg, O]`` (``fshape``) from ``x5`` and
    ``dy5``."""
    kd, kh, kw, cg, o = fshape
    groups = geom[9]
    if _is_depthwise(cg, geom):
        dw5 = np.zeros(fshape, x.dtype)
        _depthwise(x, dw5, dy, geom, 2)
        return dw5
    oshape = (dy.shape[1], dy.shape[2], dy.shape[3])
    dy2 = dy.reshape((-1, o))
    m = dy2.shape[0]
    if groups == 1 and _pointwise((kd, kh, kw), geom):
        return np.dot(x.reshape((m, cg)).T, dy2).reshape(fshape)
    width = kd * kh * kw * cg
    rows = _chunk_rows(m, width, x.itemsize)
    cols = np.empty((groups, rows, width), x.dtype)
    dw = np.zeros((width, o), x.dtype)
    dyg = _split_columns(dy2, groups)
    og = o // groups
    xf = x.reshape(-1)
    for r0 in range(0, m, rows):
        r1 = min(m, r0 + rows)
        _patch_copy(xf, cols.reshape(-1), (kd, kh, kw), geom, x.shape, oshape, r0, r1,
                    rows * width, False)
        for g in range(groups):
            dw[:, g * og:(g + 1) * og] += np.dot(cols[g, :r1 - r0].T, dyg[g, r0:r1])
    return dw.reshape(fshape)


@_jit
def conv_backprop_input5(w, dy, xshape, geom):
    """``conv_backprop_input``: ``dx5`` of shape ``(N,) + xshape`` (``xshape`` = D, H, W, C)
    from ``w5`` and ``dy5``."""
    kd, kh, kw, cg, o = w.shape
    groups = geom[9]
    n = dy.shape[0]
    oshape = (dy.shape[1], dy.shape[2], dy.shape[3])
    full = (n, xshape[0], xshape[1], xshape[2], xshape[3])
    if _is_depthwise(cg, geom):
        dx = np.zeros(full, w.dtype)
        _depthwise(dx, w, dy, geom, 1)
        return dx
    dy2 = dy.reshape((-1, o))
    w2 = _filters2(w)
    if groups == 1 and _pointwise((kd, kh, kw), geom):
        return np.dot(dy2, w2.T).reshape(full)
    m = dy2.shape[0]
    width = kd * kh * kw * cg
    rows = _chunk_rows(m, width, w.itemsize)
    dcols = np.empty((groups, rows, width), w.dtype)
    dx = np.zeros(full, w.dtype)
    dyg = _split_columns(dy2, groups)
    wg = _split_columns(w2, groups)
    for r0 in range(0, m, rows):
        r1 = min(m, r0 + rows)
        for g in range(groups):
            np.dot(dyg[g, r0:r1], wg[g].T, dcols[g, :r1 - r0])
        _patch_copy(dcols.reshape(-1), dx.reshape(-1), (kd, kh, kw), geom, full, oshape, r0,
                    r1, rows * width, True)
    return dx


# --------------------------------------------------------------------------- adapters
# Plain Python: what generated code does, for tests. Not a hot path.

def as5(a, lead: int):
    """A channels-last array of 1-3 spatial dims as 5-D (unit spatial dims after ``lead``
    leading dims)."""
    a = np.ascontiguousarray(a)
    missing = 5 - a.ndim
    return a.reshape(a.shape[:lead] + (1,) * missing + a.shape[lead:])


def geometry(strides, dilations, padding, groups) -> tuple:
    """The kernels' geometry tuple from the op's attributes."""
    missing = 3 - len(strides)
    s = (1,) * missing + tuple(strides)
    r = (1,) * missing + tuple(dilations)
    p = (0,) * missing + tuple(lo for lo, _ in padding)
    return tuple(int(v) for v in s + r + p) + (int(groups),)


def out_shape5(xshape, kshape, strides, dilations, padding) -> tuple:
    from stagecraft.ir.ops.conv import output_size
    missing = 3 - len(strides)
    return (1,) * missing + tuple(output_size(n, k, s, d, p) for n, k, s, d, p in
                                  zip(xshape, kshape, strides, dilations, padding))


def run_conv(x, w, strides, dilations, padding, groups):
    r = x.ndim - 2
    o = out_shape5(x.shape[1:-1], w.shape[:r], strides, dilations, padding)
    y = conv5(as5(x, 1), as5(w, 0), geometry(strides, dilations, padding, groups), o)
    return y.reshape((x.shape[0],) + o[3 - r:] + (w.shape[-1],))


def run_conv_backprop_filter(x, dy, filter_shape, strides, dilations, padding, groups):
    r = x.ndim - 2
    f5 = (1,) * (3 - r) + tuple(filter_shape)
    dw = conv_backprop_filter5(as5(x, 1), as5(dy, 1), f5,
                               geometry(strides, dilations, padding, groups))
    return dw.reshape(tuple(filter_shape))


def run_conv_backprop_input(w, dy, input_shape, strides, dilations, padding, groups):
    r = w.ndim - 2
    x4 = (1,) * (3 - r) + tuple(input_shape[1:])
    dx = conv_backprop_input5(as5(w, 0), as5(dy, 1), x4,
                              geometry(strides, dilations, padding, groups))
    return dx.reshape((dy.shape[0],) + tuple(input_shape[1:]))
