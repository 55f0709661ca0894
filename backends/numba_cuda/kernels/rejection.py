"""``random_gamma``, ``random_poisson`` and ``random_binomial`` on the device: one thread per
element runs the op table's sampler (``ir/ops/rejection.gamma_one`` / ``poisson_one`` /
``binomial_one``, compiled as device
functions) on its own Philox blocks, so the values depend only on the seed and the element,
as in the reference kernels."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from stagecraft.backends.numba_cpu.kernels.rejection import compiled_with
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda
from stagecraft.backends.numba_cuda.launcher import launch_over
from stagecraft.backends.numba_cuda.memory import empty, flat
from stagecraft.ir.ops import rejection
from stagecraft.ir.ops.philox import key_words as philox_key_words

cuda: Any = None  # numba.cuda, bound on first use (see launch.bind_cuda)


@functools.lru_cache(maxsize=None)
def _kernel(sampler: str) -> Callable:
    bind_cuda(globals())
    device = cuda.jit(device=True)
    key_words = device(philox_key_words)
    pair = compiled_with(device, rejection.uniform_pair, philox=device(rejection.philox))
    one = compiled_with(device, getattr(rejection, sampler), uniform_pair=pair)

    @library_kernel
    def sample(out, alpha, seed):
        k0, k1, c2, c3 = key_words(seed)
        for j in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[j] = one(np.float64(alpha[j % alpha.size]), np.uint64(j), k0, k1, c2, c3)
    return sample


def random_gamma(seed: Any, alpha: Any, shape: tuple, poisson: bool = False) -> Any:
    """The op table's ``random_gamma`` (Gamma(alpha, 1) samples of shape
    ``shape + alpha.shape``), or ``random_poisson`` with rates ``alpha`` when ``poisson``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_host(random_gamma(to_device(np.array([1, 2, 3])), to_device(np.float32(2.0)),
    ...                          (3,)))
    >>> x.dtype, x.shape, bool((x > 0).all())
    (dtype('float32'), (3,), True)
    """
    out = empty(tuple(shape) + tuple(alpha.shape), alpha.dtype)
    launch_over(_kernel("poisson_one" if poisson else "gamma_one"), out.size, flat(out),
                flat(alpha), seed)
    return out


@functools.lru_cache(maxsize=None)
def _binomial_kernel() -> Callable:
    bind_cuda(globals())
    device = cuda.jit(device=True)
    key_words = device(philox_key_words)
    pair = compiled_with(device, rejection.uniform_pair, philox=device(rejection.philox))
    one = compiled_with(device, rejection.binomial_one, uniform_pair=pair)

    @library_kernel
    def sample(out, counts, probs, seed):
        k0, k1, c2, c3 = key_words(seed)
        for j in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[j] = one(np.float64(counts[j]), np.float64(probs[j]), np.uint64(j), k0, k1, c2,
                         c3)
    return sample


def random_binomial(seed: Any, counts: Any, probs: Any) -> Any:
    """The op table's ``random_binomial``: Binomial(counts, probs) samples of the shape both
    share, as floats of their dtype.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_host(random_binomial(to_device(np.array([1, 2, 3])),
    ...                             to_device(np.float32([5, 50])), to_device(np.float32([0.5, 1]))))
    >>> x.dtype, x.tolist()[1]
    (dtype('float32'), 50.0)
    """
    out = empty(tuple(counts.shape), counts.dtype)
    launch_over(_binomial_kernel(), out.size, flat(out), flat(counts), flat(probs), seed)
    return out
