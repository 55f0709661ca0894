"""The one random stream of every backend: Philox4x32-10 (Salmon et al., SC 2011) keyed by a
seed tensor.

A seed is an int64 triple ``(global seed, op seed, call counter)``. The two seeds fold to the
32-bit key words; the counter fills counter words 2 and 3; output pair ``g`` (elements ``2g``
and ``2g + 1``) takes counter words 0 and 1, so an element's value depends only on the seed
and its index, never on how the work is split: NumPy (vectorized over pairs), Numba
(a loop) and CUDA (a thread per pair) compute the same bits. ``philox`` is written with
``np.uint64`` arithmetic only, so it runs unchanged on NumPy arrays, in ``numba.njit`` and in
``cuda.jit`` device functions.

Values from two 64-bit draws ``x = w0 << 32 | w1`` and ``y = w2 << 32 | w3``:
uniform float32 takes the top 24 bits, float64 the top 53 (float16 and bfloat16: the float32
value rounded down to a multiple of 2**-11 and 2**-8); normals use Box-Muller on two
53-bit uniforms (``u1`` in (0, 1] so its log is finite); integers in ``[low, low + span)``
take a draw modulo ``span`` (bias below 2**-32 for spans under 2**32). Truncated normals
reject values beyond two standard deviations element by element: attempt ``a`` of an element
uses counter word 3's upper 16 bits (so call counters stay below 2**48).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

MASK = 0xFFFFFFFF
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
INV_2_53 = 1.0 / 9007199254740992.0
INV_2_24 = 1.0 / 16777216.0
HALF_QUANTUM = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}  # uniform draws' resolution
TWO_PI = 2.0 * math.pi
ATTEMPT_SHIFT = 16  # truncated normals: the attempt number's place in counter word 3
TRUNCATE_AT = 2.0   # truncated normals keep |z| <= 2 (TensorFlow's truncation)

# The distributions (an int per kind, for the compiled kernels).
NORMAL, UNIFORM, UNIFORM_INT, TRUNCATED_NORMAL = 0, 1, 2, 3


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1), all uint64 holding 32 bits.

    >>> [hex(int(w)) for w in philox(*(np.uint64(0),) * 6)]   # the published test vector
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    mask = np.uint64(MASK)
    shift = np.uint64(32)
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> shift) ^ c1 ^ k0, p1 & mask, (p0 >> shift) ^ c3 ^ k1,
                          p0 & mask)
        k0 = (k0 + _W0) & mask
        k1 = (k1 + _W1) & mask
    return c0, c1, c2, c3


def key(seed: Sequence[int]) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """``(k0, k1, c2, c3)`` of a seed triple: the 64-bit seeds folded to 32 bits each, the
    call counter split over counter words 2 and 3.

    >>> [int(w) for w in key((1, 2**32 + 2, 3))]
    [1, 3, 3, 0]
    """
    a, b, counter = (int(s) & 0xFFFFFFFFFFFFFFFF for s in seed)
    return (np.uint64((a ^ (a >> 32)) & MASK), np.uint64((b ^ (b >> 32)) & MASK),
            np.uint64(counter & MASK), np.uint64(counter >> 32))


def key_words(seed):
    """``key(seed)`` for compiled code (``numba.njit`` and ``cuda.jit`` compile it): the words
    from an int64 seed array, with uint64 arithmetic only."""
    mask, shift = np.uint64(MASK), np.uint64(32)
    a, b, c = np.uint64(seed[0]), np.uint64(seed[1]), np.uint64(seed[2])
    return (a ^ (a >> shift)) & mask, (b ^ (b >> shift)) & mask, c & mask, c >> shift


def _draws(pairs: np.ndarray, seed: Sequence[int], attempt: int = 0):
    """The two 64-bit draws of each pair index in ``pairs`` (uint64 arrays)."""
    k0, k1, c2, c3 = key(seed)
    c3 = c3 | np.uint64(attempt << ATTEMPT_SHIFT)
    w0, w1, w2, w3 = philox(pairs & np.uint64(MASK), pairs >> np.uint64(32),
                            np.full_like(pairs, c2), np.full_like(pairs, c3), k0, k1)
    shift = np.uint64(32)
    return (w0 << shift) | w1, (w2 << shift) | w3


def _interleave(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(2 * a.size, a.dtype)
    out[0::2], out[1::2] = a, b
    return out[:size]


def _normals(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u1 = ((x >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * INV_2_53
    u2 = (y >> np.uint64(11)).astype(np.float64) * INV_2_53
    r = np.sqrt(-2.0 * np.log(u1))
    return r * np.cos(TWO_PI * u2), r * np.sin(TWO_PI * u2)


def sample(kind: int, shape: Sequence[int], dtype: np.dtype, seed: Sequence[int],
           low: int = 0, span: int = 1) -> np.ndarray:
    """The NumPy reference of every backend's random kernel.

    >>> sample(UNIFORM, (3,), np.float32, (1, 2, 0)).dtype
    dtype('float32')
    >>> bool((sample(UNIFORM_INT, (100,), np.int32, (1, 2, 0), low=-2, span=4) >= -2).all())
    True
    """
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    pairs = np.arange((size + 1) // 2, dtype=np.uint64)
    x, y = _draws(pairs, seed)
    half = dtype.name in HALF_QUANTUM  # float16/bfloat16: drawn as float32, then rounded
    if kind == UNIFORM:
        bits, scale = (40, INV_2_24) if dtype == np.float32 or half else (11, INV_2_53)
        a = (x >> np.uint64(bits)).astype(np.float64) * scale
        b = (y >> np.uint64(bits)).astype(np.float64) * scale
    elif kind == UNIFORM_INT:
        s = np.uint64(span)
        a, b = low + (x % s).astype(np.int64), low + (y % s).astype(np.int64)
    elif kind == NORMAL:
        a, b = _normals(x, y)
    else:
        a, b = _truncated(pairs, seed, x, y)
    out = _interleave(a, b, size)
    if half:  # through float32, as TensorFlow's casts; a uniform rounds down to a multiple of
        out = out.astype(np.float32)  # the format's quantum, so it never rounds up to 1
        if kind == UNIFORM:
            out = np.floor(out / HALF_QUANTUM[dtype.name]) * HALF_QUANTUM[dtype.name]
    return out.astype(dtype).reshape(tuple(shape))


def _truncated(pairs: np.ndarray, seed: Sequence[int], x: np.ndarray,
               y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = _normals(x, y)
    for attempt in range(1, 1 << ATTEMPT_SHIFT):
        redo_a, redo_b = np.abs(a) > TRUNCATE_AT, np.abs(b) > TRUNCATE_AT
        redo = redo_a | redo_b
        if not redo.any():
            break
        na, nb = _normals(*_draws(pairs[redo], seed, attempt))
        a[redo] = np.where(redo_a[redo], na, a[redo])
        b[redo] = np.where(redo_b[redo], nb, b[redo])
    return a, b
