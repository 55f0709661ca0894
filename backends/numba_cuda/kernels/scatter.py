"""``scatter_nd`` on the device: one thread per element of a slice walks the updates in
order, so repeated indices apply in order (the last 'update' wins) without atomics. A bad
index sets an error flag (atomic min of its row); the host reads that one number and, on
error, the offending row, to raise the reference kernel's IndexError."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import flat, scalar, to_device, to_host
from stagecraft.ir.ops.slicing import SCATTER_MODES, scatter_index_error

cuda: Any = None  # numba.cuda, bound on first use (see launch.bind_cuda)


@functools.lru_cache(maxsize=None)
def _scatter_kernel() -> Callable:
    bind_cuda(globals())

    @library_kernel
    def scatter(out, indices, updates, shape, n, k, rows, mode, first):
        for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
            for u in range(n):
                pos = 0
                ok = True
                for j in range(k):
                    i = indices[u * k + j]
                    ok = ok and 0 <= i < shape[j]
                    pos = pos * shape[j] + i
                if not ok:
                    cuda.atomic.min(first, 0, u)
                    continue
                o = pos * rows + r
                if mode == 0:
                    out[o] = updates[u * rows + r]
                elif mode == 1:
                    out[o] = out[o] + updates[u * rows + r]
                else:
                    out[o] = out[o] - updates[u * rows + r]
    return scatter


def scatter_nd(x: Any, indices: Any, updates: Any, mode: str) -> Any:
    """A new device array: ``x`` with ``updates`` written to, added to or subtracted from
    (``mode``) the slices at ``indices``, as the op table's ``scatter_nd``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.zeros(4, np.float32))
    >>> to_host(scatter_nd(x, to_device(np.array([[1], [1]])),
    ...                    to_device(np.array([2, 3], np.float32)), "add"))
    array([0., 5., 0., 0.], dtype=float32)
    """
    from stagecraft.backends.numba_cuda.kernels.shape import copy_view
    shape, ishape = tuple(x.shape), tuple(indices.shape)
    k = int(ishape[-1])
    n = int(np.prod(ishape[:-1]))
    rows = int(np.prod(shape[k:]))
    out = copy_view(x, lambda v: v)
    first = to_device(np.array([n], np.int64))
    if n and rows:
        launch_over(_scatter_kernel(), rows, flat(out), flat(indices), flat(updates),
                    to_device(np.array(shape, np.int64)), n, k, rows,
                    SCATTER_MODES.index(mode), first)
    bad = int(scalar(first))
    if bad < n:
        row = to_host(flat(indices)[bad * k:(bad + 1) * k])
        raise IndexError(scatter_index_error(ishape, bad, row, shape))
    return out
