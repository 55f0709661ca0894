"""Random ops on the GPU: the op table's Philox stream (``ir/ops/philox.py``), one thread per
output pair.

Each pair of outputs comes from one Philox block whose counter is (pair index, call counter),
so a thread needs no state and the values depend only on the ``seed`` input (a device int64
triple read by every thread: no host round trip), never on the launch configuration. Uniform
values and integers equal the reference bit for bit; normals may differ in the last bits
(the GPU's log/cos/sin).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda, grid
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.memory import empty, scalar
from stagecraft.ir.ops.philox import (ATTEMPT_SHIFT, INV_2_24, INV_2_53, MASK, TRUNCATE_AT,
                                      TWO_PI, philox)
from stagecraft.ir.ops.philox import key_words as philox_key_words  # jitted per kernel

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


def _normal(x, y, low, span):
    u1 = ((x >> np.uint64(11)) + np.uint64(1)) * INV_2_53   # (0, 1]: log(u1) is finite
    u2 = (y >> np.uint64(11)) * INV_2_53
    r = math.sqrt(-2.0 * math.log(u1))
    return r * math.cos(TWO_PI * u2), r * math.sin(TWO_PI * u2)


def _uniform32(x, y, low, span):
    return (x >> np.uint64(40)) * INV_2_24, (y >> np.uint64(40)) * INV_2_24


def _uniform64(x, y, low, span):
    return (x >> np.uint64(11)) * INV_2_53, (y >> np.uint64(11)) * INV_2_53


def _integer(x, y, low, span):
    return low + np.int64(x % span), low + np.int64(y % span)


# Two 64-bit draws -> two output values, per distribution.
VALUES: dict[str, Callable] = {"normal": _normal, "truncated": _normal,
                               "uniform32": _uniform32, "uniform64": _uniform64, "int": _integer}


@functools.lru_cache(maxsize=None)
def _kernel(kind: str) -> Callable:
    bind_cuda(globals())
    block = cuda.jit(device=True)(philox)
    key_words = cuda.jit(device=True)(philox_key_words)
    values = cuda.jit(device=True)(VALUES[kind])
    truncated = kind == "truncated"

    @cuda.jit(device=True)
    def draws(g, k0, k1, c2, c3):
        w0, w1, w2, w3 = block(g & np.uint64(MASK), g >> np.uint64(32), c2, c3, k0, k1)
        return (w0 << np.uint64(32)) | w1, (w2 << np.uint64(32)) | w3

    @cuda.jit(device=True)
    def redraw(z, position, g, k0, k1, c2, c3, low, span):
        attempt = 1
        while abs(z) > TRUNCATE_AT:
            x, y = draws(g, k0, k1, c2, c3 | (np.uint64(attempt) << np.uint64(ATTEMPT_SHIFT)))
            z = values(x, y, low, span)[position]
            attempt += 1
        return z

    @library_kernel
    def draw(out, seed, low, span):
        # The key from the seed triple, then pair g gives out[2g], out[2g + 1].
        k0, k1, c2, c3 = key_words(seed)
        pairs = (out.size + 1) // 2
        for g in range(cuda.grid(1), pairs, cuda.gridsize(1)):
            x, y = draws(np.uint64(g), k0, k1, c2, c3)
            v0, v1 = values(x, y, low, span)
            if truncated:  # each element redrawn on its own until |z| <= TRUNCATE_AT
                v0 = redraw(v0, 0, np.uint64(g), k0, k1, c2, c3, low, span)
                v1 = redraw(v1, 1, np.uint64(g), k0, k1, c2, c3, low, span)
            out[2 * g] = v0
            if 2 * g + 1 < out.size:
                out[2 * g + 1] = v1
    return draw


def _launch(kind: str, out: Any, seed: Any, low: Any, span: Any) -> Any:
    if out.size:
        launch(_kernel(kind), grid((out.size + 1) // 2), out, seed, low, span)
    return out


def normal(seed: Any, shape: Sequence[int], dtype: np.dtype, truncated: bool = False) -> Any:
    """``random_normal`` (``random_truncated_normal`` with ``truncated``): standard normal
    samples, computed in float64; ``seed`` is a device int64 triple.

    >>> from stagecraft.backends.numba_cuda.memory import to_device
    >>> z = normal(to_device(np.array([1, 2, 3])), (1000,), np.float64).copy_to_host()
    >>> bool(abs(z.mean()) < 0.2 and abs(z.std() - 1) < 0.2)
    True
    """
    return _launch("truncated" if truncated else "normal", empty(shape, dtype), seed,
                   np.int64(0), np.uint64(1))


def uniform(seed: Any, shape: Sequence[int], dtype: np.dtype) -> Any:
    """``random_uniform``: samples in [0, 1) with the dtype's full mantissa.

    >>> from stagecraft.backends.numba_cuda.memory import to_device
    >>> u = uniform(to_device(np.array([1, 2, 3])), (2, 3), np.float32).copy_to_host()
    >>> u.shape, u.dtype, bool(((0 <= u) & (u < 1)).all())
    ((2, 3), dtype('float32'), True)
    """
    kind = "uniform32" if np.dtype(dtype) == np.float32 else "uniform64"
    return _launch(kind, empty(shape, dtype), seed, np.int64(0), np.uint64(1))


def uniform_int(seed: Any, minval: Any, maxval: Any, shape: Sequence[int]) -> Any:
    """``random_uniform_int`` in [minval, maxval). The bounds are rank-0 device arrays read on
    the host (two 1-element copies) to check them like the reference kernel does.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> k = to_host(uniform_int(to_device(np.array([1, 2, 3])), to_device(np.int32(-2)),
    ...                         to_device(np.int32(2)), (50,)))
    >>> sorted(set(k.tolist()))
    [-2, -1, 0, 1]
    """
    lo, hi = int(scalar(minval)), int(scalar(maxval))
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    out = empty(shape, minval.dtype)
    return _launch("int", out, seed, np.int64(lo), np.uint64(hi - lo))
