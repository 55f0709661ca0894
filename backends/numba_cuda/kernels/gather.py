"""Indexed reads and writes: gather (with batch dims), its adjoint scatter-add, and one_hot.

Out-of-range indices raise the reference kernel's IndexError (bind turns it into
InvalidArgumentError): the kernel that reads the indices also records the first bad position,
with an atomic min on a one-element flag, and the host reads that one number after the
launch, the only device-to-host copy of these ops. (A separate check kernel, launched before,
would cost one more launch per gather: in a replayed CUDA graph of an RNN, one per step.)
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty, flat, scalar, to_device

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


@functools.lru_cache(maxsize=None)
def _check_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def check(indices, n, first):
        for i in range(cuda.grid(1), indices.size, cuda.gridsize(1)):
            v = indices[i]
            if v < 0 or v >= n:
                cuda.atomic.min(first, 0, i)
    return check


def check_indices(indices: Any, n: int) -> None:
    """Raises the reference's IndexError if an index is outside ``[0, n)``, naming the first
    bad position in C order.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> check_indices(to_device(np.array([[0, 1], [2, -1]])), 3)
    Traceback (most recent call last):
    IndexError: indices[1, 1] = -1 is not in [0, 3). Indices must be valid positions; ...
    """
    _launch_checked(_check_kernel(), indices.size, indices, n, indices, n)


def _launch_checked(kernel: Callable, size: int, indices: Any, n: int, *args: Any) -> None:
    """Launches ``kernel(*args, first)`` over ``size`` items, where ``first`` is a flag the
    kernel lowers (``cuda.atomic.min``) to the position of a bad index (one element,
    ``indices.size`` while none is bad), then raises the reference's IndexError for the first
    bad index. With nothing to launch, the indices are checked on their own (no thread would
    read them)."""
    if not size:
        if indices.size:   # (the check kernel launches over the indices: never here)
            check_indices(indices, n)
        return
    first = to_device(np.array([indices.size], np.int64))
    launch_over(kernel, size, *args, first)
    k = int(scalar(first))
    if k < indices.size:
        pos = [int(i) for i in np.unravel_index(k, indices.shape)]
        value = int(scalar(flat(indices)[k:k + 1]))
        raise IndexError(f"indices{pos} = {value} is not in [0, {n}). Indices must be valid "
                         f"positions; negative indices are not allowed.")


def _blocks(params_shape: tuple, indices_shape: tuple, axis: int, batch_dims: int) -> tuple:
    """``(npre, n, npost, ni)``: params as (batch, npre, n, npost), indices as (batch, ni)."""
    npre = int(np.prod(params_shape[batch_dims:axis]))
    npost = int(np.prod(params_shape[axis + 1:]))
    ni = int(np.prod(indices_shape[batch_dims:]))
    return npre, params_shape[axis], npost, ni


def _normalize(params_rank: int, indices_rank: int, axis: int, batch_dims: int) -> tuple:
    if batch_dims < 0:
        batch_dims += indices_rank
    return axis % params_rank, batch_dims


def source_index(o, indices, npre, n, npost, ni):
    """The params offset that output element ``o`` of a gather reads, or ``-1 - position``
    for an index outside ``[0, n)`` at that position of ``indices`` (the kernel flags it and
    reads nothing: the host raises only after the launch).

    >>> int(source_index(3, np.array([0, 2]), 1, 3, 2, 2))   # (indices[1] = 2, column 1)
    5
    >>> int(source_index(1, np.array([0, 7]), 1, 3, 1, 2))   # (indices[1] = 7: bad)
    -2
    """
    q = o % npost
    t = o // npost
    i = t % ni
    t //= ni
    p = t % npre
    b = t // npre
    at = b * ni + i
    j = indices[at]
    if j < 0 or j >= n:
        return -1 - at
    return ((b * npre + p) * n + j) * npost + q


@functools.lru_cache(maxsize=None)
def _gather_kernel() -> Callable:
    bind_cuda(globals())
    source = cuda.jit(device=True)(source_index)

    @library_kernel
    def gather(out, params, indices, npre, n, npost, ni, first):
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            k = source(o, indices, npre, n, npost, ni)
            if k >= 0:
                out[o] = params[k]
            else:
                out[o] = 0
                cuda.atomic.min(first, 0, -1 - k)
    return gather


@functools.lru_cache(maxsize=None)
def _scatter_add_kernel() -> Callable:
    bind_cuda(globals())
    source = cuda.jit(device=True)(source_index)

    @library_kernel
    def scatter_add(out, grad, indices, npre, n, npost, ni, first):
        for o in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
            k = source(o, indices, npre, n, npost, ni)
            if k >= 0:
                cuda.atomic.add(out, k, grad[o])
            else:
                cuda.atomic.min(first, 0, -1 - k)
    return scatter_add


def gather(params: Any, indices: Any, axis: int, batch_dims: int, out_shape: tuple) -> Any:
    """``gather`` of device arrays; out-of-range indices raise (after the launch, which
    reads nothing for them).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> p, i = to_device(np.array([[1, 2], [3, 4]])), to_device(np.array([1, 1, 0]))
    >>> to_host(gather(p, i, 1, 0, (2, 3)))
    array([[2, 2, 1],
           [4, 4, 3]])
    """
    axis, batch_dims = _normalize(params.ndim, indices.ndim, axis, batch_dims)
    out = empty(out_shape, params.dtype)
    npre, n, npost, ni = _blocks(tuple(params.shape), tuple(indices.shape), axis, batch_dims)
    _launch_checked(_gather_kernel(), out.size, indices, n,
                    out, params, indices, npre, n, npost, ni)
    return out


def gather_grad(grad: Any, indices: Any, like_shape: tuple, axis: int, batch_dims: int) -> Any:
    """``gather_grad``: zeros of ``like_shape`` plus ``grad`` scattered (atomic adds, so
    float sums may differ from NumPy's order in the last bits). Indices are checked like
    gather's (the reference would wrap negative ones; only a valid gather produces them).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> g, i = to_device(np.ones(3)), to_device(np.array([2, 0, 2]))
    >>> to_host(gather_grad(g, i, (4,), 0, 0))
    array([1., 0., 2., 0.])
    """
    from stagecraft.backends.numba_cuda.kernels.shape import full
    axis, batch_dims = _normalize(len(like_shape), indices.ndim, axis, batch_dims)
    out = full(like_shape, 0, grad.dtype)
    npre, n, npost, ni = _blocks(tuple(like_shape), tuple(indices.shape), axis, batch_dims)
    _launch_checked(_scatter_add_kernel(), grad.size, indices, n,
                    out, grad, indices, npre, n, npost, ni)
    return out


@functools.lru_cache(maxsize=None)
def _one_hot_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def one_hot(out, indices, on, off, depth, inner):
        on_value = on[0]
        off_value = off[0]
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            r = o % inner
            t = o // inner
            d = t % depth
            outer = t // depth
            out[o] = on_value if indices[outer * inner + r] == d else off_value
    return one_hot


def one_hot(indices: Any, on_value: Any, off_value: Any, depth: int, axis: int,
            out_shape: tuple) -> Any:
    """``one_hot``: ``depth`` positions inserted at ``axis``; out-of-range indices give a
    row of ``off_value``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> on, off = to_device(np.float32(1)), to_device(np.float32(0))
    >>> to_host(one_hot(to_device(np.array([2, 5])), on, off, 3, -1, (2, 3)))
    array([[0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    a = indices.ndim if axis == -1 else axis % (indices.ndim + 1)
    inner = int(np.prod(tuple(indices.shape)[a:]))
    out = empty(out_shape, on_value.dtype)
    launch_over(_one_hot_kernel(), out.size, out, indices, on_value, off_value, depth,
                max(inner, 1))
    return out
