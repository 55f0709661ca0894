"""Convolution on device arrays: an im2col kernel feeding the matmul (:mod:`.matmul`: cuBLAS
where it runs, else the blocked kernel; batched over feature groups), and a col2im gather for
the input gradient.

Operands are viewed as 5-D channels-last ``[N, D, H, W, C]`` and filters as
``[KD, KH, KW, Cg, O]`` with the geometry tuple of the CPU kernels
(:func:`stagecraft.backends.numba_cpu.kernels.conv.geometry`: strides, dilations, padding
before, groups). The im2col matrix is ``cols [groups, M, KD*KH*KW*Cg]`` with
``M = N*OD*OH*OW``; one thread per element. col2im runs one thread per input element that
sums the columns holding it (no atomics, so results do not depend on thread order).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np  # noqa: F401 (the docstring examples use it)

from stagecraft.backends.numba_cpu.kernels.conv import geometry
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.kernels import matmul, shape
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty, reshape

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


@functools.lru_cache(maxsize=None)
def _kernels() -> dict[str, Callable]:
    bind_cuda(globals())

    @library_kernel
    def im2col(cols, x, s5, k3, o3, g):
        nd, nh, nw, nc = s5[1], s5[2], s5[3], s5[4]
        kd, kh, kw = k3
        od, oh, ow = o3
        cg = nc // g[9]
        width = kd * kh * kw * cg
        m = s5[0] * od * oh * ow
        for i in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
            q = i % width
            row = (i // width) % m
            grp = i // (width * m)
            c = q % cg
            kk = q // cg
            f = kk % kw
            e = (kk // kw) % kh
            a = kk // (kw * kh)
            v = row % ow
            y = (row // ow) % oh
            z = (row // (ow * oh)) % od
            b = row // (ow * oh * od)
            iz = z * g[0] + a * g[3] - g[6]
            iy = y * g[1] + e * g[4] - g[7]
            ix = v * g[2] + f * g[5] - g[8]
            if 0 <= iz < nd and 0 <= iy < nh and 0 <= ix < nw:
                cols[i] = x[(((b * nd + iz) * nh + iy) * nw + ix) * nc + grp * cg + c]
            else:
                cols[i] = 0

    @cuda.jit(device=True)
    def taps(i, p, r, s, n_out, t):
        """Output position whose tap t along one dim reads input position i, or -1."""
        num = i + p - t * r
        if num < 0 or num % s != 0 or num // s >= n_out:
            return -1
        return num // s

    @library_kernel
    def col2im(dx, dcols, s5, k3, o3, g):
        nd, nh, nw, nc = s5[1], s5[2], s5[3], s5[4]
        kd, kh, kw = k3
        od, oh, ow = o3
        cg = nc // g[9]
        width = kd * kh * kw * cg
        m = s5[0] * od * oh * ow
        for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            ch = i % nc
            ix = (i // nc) % nw
            iy = (i // (nc * nw)) % nh
            iz = (i // (nc * nw * nh)) % nd
            b = i // (nc * nw * nh * nd)
            grp = ch // cg
            c = ch % cg
            acc = dcols[0] * 0
            for a in range(kd):
                z = taps(iz, g[6], g[3], g[0], od, a)
                if z < 0:
                    continue
                for e in range(kh):
                    y = taps(iy, g[7], g[4], g[1], oh, e)
                    if y < 0:
                        continue
                    for f in range(kw):
                        v = taps(ix, g[8], g[5], g[2], ow, f)
                        if v < 0:
                            continue
                        row = ((b * od + z) * oh + y) * ow + v
                        acc += dcols[(grp * m + row) * width + ((a * kh + e) * kw + f) * cg + c]
            dx[i] = acc

    return {"im2col": im2col, "col2im": col2im}


def _plan(x_shape: tuple, k_shape: tuple, out_spatial: tuple, attrs: dict) -> tuple:
    """(5-D input shape, 3-D kernel, 3-D output dims, geometry)."""
    lead = 3 - len(k_shape)
    s5 = (int(x_shape[0]),) + (1,) * lead + tuple(int(v) for v in x_shape[1:])
    k3 = (1,) * lead + tuple(int(v) for v in k_shape)
    o3 = (1,) * lead + tuple(int(v) for v in out_spatial)
    return s5, k3, o3, geometry(attrs["strides"], attrs["dilations"], attrs["padding"],
                                attrs["groups"])


def _columns(x: Any, s5: tuple, k3: tuple, o3: tuple, g: tuple) -> Any:
    groups = g[9]
    m = s5[0] * math.prod(o3)
    cols = empty((groups, m, math.prod(k3) * (s5[4] // groups)), x.dtype)
    launch_over(_kernels()["im2col"], cols.size, cols, x, s5, k3, o3, g)
    return cols


def _by_group(a: Any, rows: int, groups: int) -> Any:
    """``[rows, groups * k]`` (any contiguous array of that size) -> ``[groups, rows, k]``
    (a view when there is one group, else a copy)."""
    k = math.prod(a.shape) // (rows * groups)
    if groups == 1:
        return reshape(a, (1, rows, k))
    return shape.copy_view(a, lambda v: v.reshape(rows, groups, k).transpose(1, 0, 2))


def _ungroup(a: Any, out_shape: tuple) -> Any:
    """``[groups, rows, k]`` -> ``[rows, groups * k]`` viewed as ``out_shape``."""
    if a.shape[0] == 1:
        return reshape(a, tuple(out_shape))
    return reshape(shape.copy_view(a, lambda v: v.transpose(1, 0, 2)), tuple(out_shape))


def conv(x: Any, w: Any, attrs: dict, out_shape: tuple) -> Any:
    """``conv`` of device arrays into ``out_shape``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = {"strides": (1,), "dilations": (1,), "padding": ((1, 1),), "groups": 1}
    >>> y = conv(to_device(np.ones((1, 3, 1))), to_device(np.ones((3, 1, 1))), a, (1, 3, 1))
    >>> to_host(y).ravel().tolist()
    [2.0, 3.0, 2.0]
    """
    r = len(attrs["strides"])
    ws = tuple(int(v) for v in w.shape)  # (the simulator's shapes take no negative index)
    s5, k3, o3, g = _plan(tuple(x.shape), ws[:r], out_shape[1:-1], attrs)
    groups, o = g[9], ws[-1]
    cols = _columns(x, s5, k3, o3, g)
    m = cols.shape[1]
    wg = _by_group(w, cols.shape[2], groups)
    y = matmul.matmul(cols, wg, False, False, (groups, m, o // groups))
    return _ungroup(y, out_shape)


def conv_backprop_filter(x: Any, dy: Any, attrs: dict) -> Any:
    """``conv_backprop_filter`` of device arrays (``attrs["filter_shape"]``).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = {"strides": (1,), "dilations": (1,), "padding": ((0, 0),), "groups": 1,
    ...      "filter_shape": (2, 1, 1)}
    >>> dw = conv_backprop_filter(to_device(np.array([[[1.0], [2.0], [3.0]]])),
    ...                           to_device(np.ones((1, 2, 1))), a)
    >>> to_host(dw).ravel().tolist()
    [3.0, 5.0]
    """
    fshape = tuple(int(v) for v in attrs["filter_shape"])
    r = len(attrs["strides"])
    s5, k3, o3, g = _plan(tuple(x.shape), fshape[:r], tuple(dy.shape)[1:r + 1], attrs)
    groups, o = g[9], fshape[-1]
    cols = _columns(x, s5, k3, o3, g)
    m, width = cols.shape[1], cols.shape[2]
    dw = matmul.matmul(cols, _by_group(dy, m, groups), True, False, (groups, width, o // groups))
    return _ungroup(dw, fshape)


def conv_backprop_input(w: Any, dy: Any, attrs: dict) -> Any:
    """``conv_backprop_input`` of device arrays (``attrs["input_shape"]``, batch from ``dy``).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> a = {"strides": (2,), "dilations": (1,), "padding": ((0, 0),), "groups": 1,
    ...      "input_shape": (None, 4, 1)}
    >>> dx = conv_backprop_input(to_device(np.array([[[1.0]], [[2.0]]])),
    ...                          to_device(np.ones((1, 2, 1))), a)
    >>> to_host(dx).ravel().tolist()
    [1.0, 2.0, 1.0, 2.0]
    """
    x_shape = (int(dy.shape[0]),) + tuple(int(v) for v in attrs["input_shape"][1:])
    r = len(attrs["strides"])
    s5, k3, o3, g = _plan(x_shape, tuple(w.shape)[:r], tuple(dy.shape)[1:r + 1], attrs)
    groups = g[9]
    width = math.prod(k3) * (s5[4] // groups)
    m = s5[0] * math.prod(o3)
    dcols = matmul.matmul(_by_group(dy, m, groups), _by_group(w, width, groups), False, True,
                          (groups, m, width))
    dx = empty(x_shape, w.dtype)
    launch_over(_kernels()["col2im"], dx.size, dx, dcols, s5, k3, o3, g)
    return dx
