"""Pooling kernels over 5-D channels-last arrays ``(batch, depth, height, width, channels)``.

Generated code views 1-D and 2-D pooling as 3-D with unit leading spatial dims (window 1,
stride 1, no padding there). ``geometry`` is the tuple ``(kd, kh, kw, sd, sh, sw, pd, ph, pw,
qd, qh, qw)``: window, strides, padding before and padding after of each spatial dim. The
window loops visit only real (unpadded) elements, in row-major order, and the channel loop is
innermost (contiguous). Results have the input's dtype, like the op table's NumPy kernels:
``max_pool`` propagates NaN like ``np.max``; ``avg_pool`` sums in the input dtype and divides
by the number of real elements; ``max_pool_grad`` adds each window's gradient at its first
maximum (TensorFlow's routing).
"""
from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def _out_dims(shape, g):
    od = (shape[1] + g[6] + g[9] - g[0]) // g[3] + 1
    oh = (shape[2] + g[7] + g[10] - g[1]) // g[4] + 1
    ow = (shape[3] + g[8] + g[11] - g[2]) // g[5] + 1
    return od, oh, ow


@_jit
def _span(o, k, s, p, n):
    """The real input range [start, stop) of window ``o`` along one dim."""
    start = o * s - p
    return max(start, 0), min(start + k, n)


@_jit
def max_pool5(x, g):
    """``max_pool`` of a 5-D array with geometry ``g`` (see the module doc)."""
    nb, nd, nh, nw, nc = x.shape
    od, oh, ow = _out_dims(x.shape, g)
    out = np.empty((nb, od, oh, ow, nc), x.dtype)
    for b in range(nb):
        for i in range(od):
            d0, d1 = _span(i, g[0], g[3], g[6], nd)
            for j in range(oh):
                h0, h1 = _span(j, g[1], g[4], g[7], nh)
                for k in range(ow):
                    w0, w1 = _span(k, g[2], g[5], g[8], nw)
                    o = out[b, i, j, k]
                    first = True
                    for d in range(d0, d1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                row = x[b, d, h, w]
                                if first:
                                    for c in range(nc):
                                        o[c] = row[c]
                                    first = False
                                else:
                                    for c in range(nc):
                                        v = row[c]
                                        if v > o[c] or v != v:
                                            o[c] = v
    return out


@_jit
def avg_pool5(x, g):
    """``avg_pool`` of a 5-D array: each window's sum over its real elements, divided by
    their number."""
    nb, nd, nh, nw, nc = x.shape
    od, oh, ow = _out_dims(x.shape, g)
    out = np.zeros((nb, od, oh, ow, nc), x.dtype)
    count = np.empty(1, x.dtype)
    for b in range(nb):
        for i in range(od):
            d0, d1 = _span(i, g[0], g[3], g[6], nd)
            for j in range(oh):
                h0, h1 = _span(j, g[1], g[4], g[7], nh)
                for k in range(ow):
                    w0, w1 = _span(k, g[2], g[5], g[8], nw)
                    o = out[b, i, j, k]
                    for d in range(d0, d1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                row = x[b, d, h, w]
                                for c in range(nc):
                                    o[c] += row[c]
                    count[0] = (d1 - d0) * (h1 - h0) * (w1 - w0)
                    for c in range(nc):
                        o[c] = o[c] / count[0]
    return out


@_jit
def argmax5(x, g):
    """The flat ``(depth, height, width)`` position of each window's first maximum, per
    channel: an int32 array shaped like the pooled output (TensorFlow's routing)."""
    nb, nd, nh, nw, nc = x.shape
    od, oh, ow = _out_dims(x.shape, g)
    at = np.empty((nb, od, oh, ow, nc), np.int32)
    best = np.empty(nc, x.dtype)
    for b in range(nb):
        for i in range(od):
            d0, d1 = _span(i, g[0], g[3], g[6], nd)
            for j in range(oh):
                h0, h1 = _span(j, g[1], g[4], g[7], nh)
                for k in range(ow):
                    w0, w1 = _span(k, g[2], g[5], g[8], nw)
                    where = at[b, i, j, k]
                    first = True
                    for d in range(d0, d1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                row = x[b, d, h, w]
                                pos = (d * nh + h) * nw + w
                                for c in range(nc):
                                    if first or row[c] > best[c]:
                                        best[c] = row[c]
                                        where[c] = pos
                                first = False
    return at


@_jit
def max_pool_grad5(x, dy, g):
    """``max_pool_grad``: zeros shaped like ``x`` plus each window's ``dy`` at its first
    maximum of ``x``."""
    nb, nd, nh, nw, nc = x.shape
    at = argmax5(x, g).reshape((nb, -1, nc))
    dy3 = dy.reshape((nb, -1, nc))
    dx = np.zeros(x.shape, x.dtype)
    flat = dx.reshape((nb, nd * nh * nw, nc))
    for b in range(nb):
        for o in range(at.shape[1]):
            for c in range(nc):
                flat[b, at[b, o, c], c] += dy3[b, o, c]
    return dx


@_jit
def max_pool_grad_grad5(x, grad, g):
    """``max_pool_grad_grad``: ``grad`` (shaped like ``x``) read at each window's first
    maximum of ``x``."""
    nb, nd, nh, nw, nc = x.shape
    at = argmax5(x, g)
    out = np.empty(at.shape, x.dtype)
    src = grad.reshape((nb, nd * nh * nw, nc))
    at3, out3 = at.reshape((nb, -1, nc)), out.reshape((nb, -1, nc))
    for b in range(nb):
        for o in range(at3.shape[1]):
            for c in range(nc):
                out3[b, o, c] = src[b, at3[b, o, c], c]
    return out


@_jit
def avg_pool_grad5(dy, nd, nh, nw, g):
    """``avg_pool_grad``: each window's ``dy`` divided by its number of real elements and
    added over them, into zeros of shape ``(batch, nd, nh, nw, channels)``."""
    nb, od, oh, ow, nc = dy.shape
    dx = np.zeros((nb, nd, nh, nw, nc), dy.dtype)
    share = np.empty(nc, dy.dtype)
    count = np.empty(1, dy.dtype)
    for b in range(nb):
        for i in range(od):
            d0, d1 = _span(i, g[0], g[3], g[6], nd)
            for j in range(oh):
                h0, h1 = _span(j, g[1], g[4], g[7], nh)
                for k in range(ow):
                    w0, w1 = _span(k, g[2], g[5], g[8], nw)
                    count[0] = (d1 - d0) * (h1 - h0) * (w1 - w0)
                    for c in range(nc):
                        share[c] = dy[b, i, j, k, c] / count[0]
                    for d in range(d0, d1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                row = dx[b, d, h, w]
                                for c in range(nc):
                                    row[c] += share[c]
    return dx


def geometry(ksize, strides, padding) -> tuple:
    """The 12-int geometry tuple of a 1- to 3-D pooling (leading spatial dims of a 1-D or 2-D
    pooling get window 1, stride 1, no padding).

    >>> geometry((2,), (2,), ((0, 1),))
    (1, 1, 2, 1, 1, 2, 0, 0, 0, 0, 0, 1)
    """
    lead = 3 - len(ksize)
    k = (1,) * lead + tuple(int(v) for v in ksize)
    s = (1,) * lead + tuple(int(v) for v in strides)
    lo = (0,) * lead + tuple(int(p[0]) for p in padding)
    hi = (0,) * lead + tuple(int(p[1]) for p in padding)
    return k + s + lo + hi
