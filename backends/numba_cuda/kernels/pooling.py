"""Pooling kernels on device arrays, over the 5-D channels-last view ``(batch, depth, height,
width, channels)`` that the CPU kernels use too (``geometry`` from
:mod:`stagecraft.backends.numba_cpu.kernels.pooling`: window, strides, padding before and
after). Every kernel is a gather, without atomics, so results do not depend on thread order:
one thread per output element for the pooling ops, ``max_pool_grad_grad`` and the first
maxima that ``max_pool_grad`` finds first, one per input element for the gradients (each
visits the windows that hold it).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cpu.kernels.pooling import geometry
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


@functools.lru_cache(maxsize=None)
def _kernels() -> dict[str, Callable]:
    bind_cuda(globals())

    @cuda.jit(device=True)
    def span(o, k, s, p, n):
        start = o * s - p
        return max(start, 0), min(start + k, n)

    @cuda.jit(device=True)
    def windows(v, k, s, p, n_out):
        """The outputs [first, last] whose window along one dim holds input position v."""
        lo = v + p - k + 1
        first = 0 if lo <= 0 else (lo + s - 1) // s
        return first, min((v + p) // s, n_out - 1)

    @cuda.jit(device=True)
    def first_max(x, b, c, i, j, k, shape, g):
        """The flat 5-D offset of the first maximum of channel c in window (i, j, k)."""
        nd, nh, nw, nc = shape[1], shape[2], shape[3], shape[4]
        d0, d1 = span(i, g[0], g[3], g[6], nd)
        h0, h1 = span(j, g[1], g[4], g[7], nh)
        w0, w1 = span(k, g[2], g[5], g[8], nw)
        at = (((b * nd + d0) * nh + h0) * nw + w0) * nc + c
        for d in range(d0, d1):
            for h in range(h0, h1):
                for w in range(w0, w1):
                    pos = (((b * nd + d) * nh + h) * nw + w) * nc + c
                    if x[pos] > x[at]:
                        at = pos
        return at

    @cuda.jit(device=True)
    def unravel(o, od, oh, ow, nc):
        c = o % nc
        t = o // nc
        k = t % ow
        t //= ow
        j = t % oh
        t //= oh
        return t // od, t % od, j, k, c

    @library_kernel
    def max_pool(out, x, shape, out_dims, g):
        nd, nh, nw, nc = shape[1], shape[2], shape[3], shape[4]
        od, oh, ow = out_dims
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            b, i, j, k, c = unravel(o, od, oh, ow, nc)
            d0, d1 = span(i, g[0], g[3], g[6], nd)
            h0, h1 = span(j, g[1], g[4], g[7], nh)
            w0, w1 = span(k, g[2], g[5], g[8], nw)
            m = x[(((b * nd + d0) * nh + h0) * nw + w0) * nc + c]
            for d in range(d0, d1):
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        v = x[(((b * nd + d) * nh + h) * nw + w) * nc + c]
                        if v > m or v != v:
                            m = v
            out[o] = m

    @library_kernel
    def avg_pool(out, x, shape, out_dims, g):
        nd, nh, nw, nc = shape[1], shape[2], shape[3], shape[4]
        od, oh, ow = out_dims
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            b, i, j, k, c = unravel(o, od, oh, ow, nc)
            d0, d1 = span(i, g[0], g[3], g[6], nd)
            h0, h1 = span(j, g[1], g[4], g[7], nh)
            w0, w1 = span(k, g[2], g[5], g[8], nw)
            acc = x[0] - x[0]
            for d in range(d0, d1):
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        acc += x[(((b * nd + d) * nh + h) * nw + w) * nc + c]
            out[o] = acc / ((d1 - d0) * (h1 - h0) * (w1 - w0))

    @library_kernel
    def argmax(at, x, shape, out_dims, g):
        nc = shape[4]
        od, oh, ow = out_dims
        for o in range(cuda.grid(1), at.size, cuda.gridsize(1)):
            b, i, j, k, c = unravel(o, od, oh, ow, nc)
            at[o] = first_max(x, b, c, i, j, k, shape, g)

    @library_kernel
    def max_grad(dx, at, dy, shape, out_dims, g):
        nd, nh, nw, nc = shape[1], shape[2], shape[3], shape[4]
        od, oh, ow = out_dims
        for q in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            b, d, h, w, c = unravel(q, nd, nh, nw, nc)
            i0, i1 = windows(d, g[0], g[3], g[6], od)
            j0, j1 = windows(h, g[1], g[4], g[7], oh)
            k0, k1 = windows(w, g[2], g[5], g[8], ow)
            acc = dy[0] - dy[0]
            for i in range(i0, i1 + 1):
                for j in range(j0, j1 + 1):
                    for k in range(k0, k1 + 1):
                        o = (((b * od + i) * oh + j) * ow + k) * nc + c
                        if at[o] == q:
                            acc += dy[o]
            dx[q] = acc

    @library_kernel
    def max_grad_grad(out, x, grad, shape, out_dims, g):
        nc = shape[4]
        od, oh, ow = out_dims
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            b, i, j, k, c = unravel(o, od, oh, ow, nc)
            out[o] = grad[first_max(x, b, c, i, j, k, shape, g)]

    @library_kernel
    def avg_grad(dx, dy, shape, out_dims, g):
        nd, nh, nw, nc = shape[1], shape[2], shape[3], shape[4]
        od, oh, ow = out_dims
        for q in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            b, d, h, w, c = unravel(q, nd, nh, nw, nc)
            i0, i1 = windows(d, g[0], g[3], g[6], od)
            j0, j1 = windows(h, g[1], g[4], g[7], oh)
            k0, k1 = windows(w, g[2], g[5], g[8], ow)
            acc = dy[0] - dy[0]
            for i in range(i0, i1 + 1):
                d0, d1 = span(i, g[0], g[3], g[6], nd)
                for j in range(j0, j1 + 1):
                    h0, h1 = span(j, g[1], g[4], g[7], nh)
                    for k in range(k0, k1 + 1):
                        w0, w1 = span(k, g[2], g[5], g[8], nw)
                        n = (d1 - d0) * (h1 - h0) * (w1 - w0)
                        acc += dy[(((b * od + i) * oh + j) * ow + k) * nc + c] / n
            dx[q] = acc

    return {"max_pool": max_pool, "avg_pool": avg_pool, "argmax": argmax, "max_grad": max_grad,
            "max_grad_grad": max_grad_grad, "avg_grad": avg_grad}


def _plan(shape: tuple, attrs: dict) -> tuple[tuple, tuple, tuple]:
    """(5-D input shape, 5-D output dims (od, oh, ow), geometry) of a pooling."""
    g = geometry(attrs["ksize"], attrs["strides"], attrs["padding"])
    lead = 5 - len(shape)
    s5 = (shape[0],) + (1,) * lead + tuple(shape[1:])
    out = tuple((s5[1 + i] + g[6 + i] + g[9 + i] - g[i]) // g[3 + i] + 1 for i in range(3))
    return tuple(int(v) for v in s5), out, g


def pool(x: Any, attrs: dict, out_shape: tuple, average: bool) -> Any:
    """``max_pool`` (``average=False``) or ``avg_pool`` of a device array.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([[[1.0], [3.0], [2.0]]]))
    >>> a = {"ksize": (2,), "strides": (1,), "padding": ((0, 1),)}
    >>> to_host(pool(x, a, (1, 3, 1), False)).ravel().tolist()
    [3.0, 3.0, 2.0]
    >>> to_host(pool(x, a, (1, 3, 1), True)).ravel().tolist()
    [2.0, 2.5, 2.0]
    """
    s5, out_dims, g = _plan(tuple(x.shape), attrs)
    out = empty(out_shape, x.dtype)
    kernel = _kernels()["avg_pool" if average else "max_pool"]
    launch_over(kernel, out.size, out, x, s5, out_dims, g)
    return out


def max_pool_grad(x: Any, dy: Any, attrs: dict) -> Any:
    """``max_pool_grad``: each window's ``dy`` at its first maximum of ``x``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x, dy = to_device(np.array([[[1.0], [3.0], [3.0]]])), to_device(np.ones((1, 2, 1)))
    >>> a = {"ksize": (2,), "strides": (1,), "padding": ((0, 0),)}
    >>> to_host(max_pool_grad(x, dy, a)).ravel().tolist()
    [0.0, 2.0, 0.0]
    """
    s5, out_dims, g = _plan(tuple(x.shape), attrs)
    at = empty(tuple(dy.shape), np.int64)  # each window's first maximum, found once
    launch_over(_kernels()["argmax"], at.size, at, x, s5, out_dims, g)
    dx = empty(tuple(x.shape), x.dtype)
    launch_over(_kernels()["max_grad"], dx.size, dx, at, dy, s5, out_dims, g)
    return dx


def max_pool_grad_grad(x: Any, grad: Any, attrs: dict, out_shape: tuple) -> Any:
    """``max_pool_grad_grad``: ``grad`` read at each window's first maximum of ``x``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([[[1.0], [3.0], [2.0]]]))
    >>> g = to_device(np.array([[[10.0], [20.0], [30.0]]]))
    >>> a = {"ksize": (2,), "strides": (1,), "padding": ((0, 0),)}
    >>> to_host(max_pool_grad_grad(x, g, a, (1, 2, 1))).ravel().tolist()
    [20.0, 20.0]
    """
    s5, out_dims, g5 = _plan(tuple(x.shape), attrs)
    out = empty(out_shape, x.dtype)
    launch_over(_kernels()["max_grad_grad"], out.size, out, x, grad, s5, out_dims, g5)
    return out


def avg_pool_grad(dy: Any, attrs: dict) -> Any:
    """``avg_pool_grad``: each window's ``dy`` spread evenly over its real elements.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = {"ksize": (2,), "strides": (1,), "padding": ((0, 1),), "input_shape": (1, 3, 1)}
    >>> to_host(avg_pool_grad(to_device(np.ones((1, 3, 1))), a)).ravel().tolist()
    [0.5, 1.0, 1.5]
    """
    shape = (int(dy.shape[0]),) + tuple(int(v) for v in attrs["input_shape"][1:])
    s5, out_dims, g = _plan(shape, attrs)
    dx = empty(shape, dy.dtype)
    launch_over(_kernels()["avg_grad"], dx.size, dx, dy, s5, out_dims, g)
    return dx
