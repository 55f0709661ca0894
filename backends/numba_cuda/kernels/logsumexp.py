"""``cumulative_logsumexp`` on the device: one thread per line accumulates with NumPy's
``logaddexp`` (``kernels.device_numpy``'s device spelling; NumPy itself under the simulator),
in the reference kernel's order."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda, simulated
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty, flat

cuda: Any = None  # numba.cuda, bound on first use (see launch.bind_cuda)


@functools.lru_cache(maxsize=None)
def _kernel() -> Callable:
    bind_cuda(globals())
    if simulated():
        logaddexp = np.logaddexp
    else:
        from stagecraft.backends.numba_cuda.kernels.device_numpy import module
        logaddexp = module().logaddexp

    @library_kernel
    def scan(out, x, n, inner, lines, exclusive, reverse, start):
        for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
            base = (line // inner) * n * inner + line % inner
            acc = start
            for jj in range(n):
                j = n - 1 - jj if reverse else jj
                at = base + j * inner
                if exclusive:
                    out[at] = acc
                acc = logaddexp(acc, x[at])
                if not exclusive:
                    out[at] = acc
    return scan


def cumulative_logsumexp(x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    """The op table's ``cumulative_logsumexp`` along ``axis``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(cumulative_logsumexp(to_device(np.log(np.array([1.0, 2.0, 3.0]))), 0,
    ...                              False, False)).round(6).tolist()
    [0.0, 1.098612, 1.791759]
    """
    shape = tuple(x.shape)
    axis %= len(shape)
    n, inner = shape[axis], int(np.prod(shape[axis + 1:]))
    out = empty(shape, x.dtype)
    lines = int(np.prod(shape)) // max(n, 1)
    if n:
        launch_over(_kernel(), lines, flat(out), flat(x), n, inner, lines, bool(exclusive),
                    bool(reverse), x.dtype.type(-np.inf))   # log(0), of x's dtype
    return out
