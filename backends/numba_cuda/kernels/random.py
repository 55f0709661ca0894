"""Random ops from a counter-based generator: Philox4x32-10 keyed by the op's seed.

Every pair of outputs comes from one Philox block whose counter is (pair index, call
counter), so a kernel thread needs no state and results depend only on the ``seed`` attribute
(global seed, op seed, call counter), never on the launch configuration: the same seed gives
the same values on any grid, and on the simulator and a GPU. The streams differ from the
reference's (NumPy's Philox4x64 through ``Generator``), as the op table allows: the same
distributions, not the same numbers. Uniform floats take the top 24 (float32) or 53 (float64)
bits of a 64-bit draw; normals use Box-Muller on two 53-bit uniforms; integers take a 64-bit
draw modulo the range (bias below 2**-32 for ranges under 2**32).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda.launch import bind_cuda, grid
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.memory import empty, scalar

_MASK = 0xFFFFFFFF

# numba.cuda, bound by the kernel factories on first use (see launch.bind_cuda).
cuda: Any = None


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1), all uint64 holding 32 bits.

    >>> [hex(int(w)) for w in philox(*(np.uint64(0),) * 6)]   # the published test vector
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    mask = np.uint64(_MASK)
    shift = np.uint64(32)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> shift) ^ c1 ^ k0, p1 & mask, (p0 >> shift) ^ c3 ^ k1,
                          p0 & mask)
        k0 = (k0 + np.uint64(0x9E3779B9)) & mask
        k1 = (k1 + np.uint64(0xBB67AE85)) & mask
    return c0, c1, c2, c3


def key(seed: Sequence[int]) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """``(k0, k1, c2, c3)``: the key folds the 64-bit global and op seeds to 32 bits each;
    the call counter fills the upper counter words.

    >>> [int(w) for w in key((1, 2**32 + 2, 3))]
    [1, 3, 3, 0]
    """
    a, b, counter = (int(s) & 0xFFFFFFFFFFFFFFFF for s in seed)
    return (np.uint64((a ^ (a >> 32)) & _MASK), np.uint64((b ^ (b >> 32)) & _MASK),
            np.uint64(counter & _MASK), np.uint64(counter >> 32))


_TWO_PI = 2.0 * math.pi
_2_53 = 1.0 / 9007199254740992.0
_2_24 = 1.0 / 16777216.0


def _normal(x, y, low, span):
    u1 = ((x >> np.uint64(11)) + np.uint64(1)) * _2_53   # (0, 1]: log(u1) is finite
    u2 = (y >> np.uint64(11)) * _2_53
    r = math.sqrt(-2.0 * math.log(u1))
    return r * math.cos(_TWO_PI * u2), r * math.sin(_TWO_PI * u2)


def _uniform32(x, y, low, span):
    return (x >> np.uint64(40)) * _2_24, (y >> np.uint64(40)) * _2_24


def _uniform64(x, y, low, span):
    return (x >> np.uint64(11)) * _2_53, (y >> np.uint64(11)) * _2_53


def _integer(x, y, low, span):
    return low + np.int64(x % span), low + np.int64(y % span)


# Two 64-bit draws -> two output values, per distribution.
VALUES: dict[str, Callable] = {"normal": _normal, "uniform32": _uniform32,
                               "uniform64": _uniform64, "int": _integer}


@functools.lru_cache(maxsize=None)
def _kernel(kind: str) -> Callable:
    bind_cuda(globals())
    block = cuda.jit(device=True)(philox)
    values = cuda.jit(device=True)(VALUES[kind])

    @cuda.jit
    def draw(out, k0, k1, c2, c3, low, span):
        # Pair g gives out[2g] and out[2g + 1] from one Philox block.
        pairs = (out.size + 1) // 2
        for g in range(cuda.grid(1), pairs, cuda.gridsize(1)):
            w0, w1, w2, w3 = block(np.uint64(g) & np.uint64(_MASK),
                                   np.uint64(g) >> np.uint64(32), c2, c3, k0, k1)
            v0, v1 = values((w0 << np.uint64(32)) | w1, (w2 << np.uint64(32)) | w3, low, span)
            out[2 * g] = v0
            if 2 * g + 1 < out.size:
                out[2 * g + 1] = v1
    return draw


def _launch(kind: str, out: Any, seed: Sequence[int], low: Any, span: Any) -> Any:
    if out.size:
        launch(_kernel(kind), grid((out.size + 1) // 2), out, *key(seed), low, span)
    return out


def normal(shape: Sequence[int], dtype: np.dtype, seed: Sequence[int]) -> Any:
    """``random_normal``: standard normal samples, computed in float64.

    >>> z = normal((1000,), np.float64, (1, 2, 3)).copy_to_host()
    >>> bool(abs(z.mean()) < 0.2 and abs(z.std() - 1) < 0.2)
    True
    """
    return _launch("normal", empty(shape, dtype), seed, np.int64(0), np.uint64(1))


def uniform(shape: Sequence[int], dtype: np.dtype, seed: Sequence[int]) -> Any:
    """``random_uniform``: samples in [0, 1) with the dtype's full mantissa.

    >>> u = uniform((2, 3), np.float32, (1, 2, 3)).copy_to_host()
    >>> u.shape, u.dtype, bool(((0 <= u) & (u < 1)).all())
    ((2, 3), dtype('float32'), True)
    """
    kind = "uniform32" if np.dtype(dtype) == np.float32 else "uniform64"
    return _launch(kind, empty(shape, dtype), seed, np.int64(0), np.uint64(1))


def uniform_int(minval: Any, maxval: Any, shape: Sequence[int], seed: Sequence[int]) -> Any:
    """``random_uniform_int`` in [minval, maxval). The bounds are rank-0 device arrays read on
    the host (two 1-element copies) to check them like the reference kernel does.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> k = to_host(uniform_int(to_device(np.int32(-2)), to_device(np.int32(2)), (50,), (1, 2, 3)))
    >>> sorted(set(k.tolist()))
    [-2, -1, 0, 1]
    """
    lo, hi = int(scalar(minval)), int(scalar(maxval))
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    out = empty(shape, minval.dtype)
    return _launch("int", out, seed, np.int64(lo), np.uint64(hi - lo))
