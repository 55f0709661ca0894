"""FFT kernels for compiled code (``ir/ops/fft.py``; Numba has no ``np.fft``): an iterative
radix-2 transform for power-of-two lengths and Bluestein's chirp-z algorithm (three radix-2
transforms of a power-of-two length >= 2n - 1) for every other length, computed in complex128.

Contract for generated code: the transformed axis of a C-contiguous array is viewed as the
middle axis of ``(outer, n, inner)``; every kernel returns a fresh array of that form.

* ``fft_axis3(x, inverse)``: the DFT (``inverse``: the inverse, scaled by 1/n) along axis 1;
* ``fit_axis3(x, n)``: axis 1 cropped or zero-padded (at the end) to ``n``;
* ``hermitian_axis3(x, n)``: the ``n``-point spectrum whose first ``n // 2 + 1`` entries are
  ``x``'s along axis 1 and whose others are their conjugates mirrored (``irfft`` then is the
  real part of its inverse transform; the imaginary parts of the zero and Nyquist terms drop
  out, as in NumPy).

>>> x = np.arange(5.0).reshape(1, 5, 1).astype(np.complex128)
>>> bool(np.allclose(fft_axis3(x, False)[0, :, 0], np.fft.fft(np.arange(5.0))))
True
"""
from __future__ import annotations

import math

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def _radix2(buf, inverse):
    """In-place unnormalized DFT of ``buf`` (length a power of two)."""
    n = buf.size
    j = 0
    for i in range(1, n):  # bit-reversal permutation
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            buf[i], buf[j] = buf[j], buf[i]
    sign = 1.0 if inverse else -1.0
    size = 2
    while size <= n:
        half = size // 2
        step = sign * 2.0 * math.pi / size
        for start in range(0, n, size):
            for k in range(half):
                w = complex(math.cos(step * k), math.sin(step * k))
                a = buf[start + k]
                b = buf[start + k + half] * w
                buf[start + k] = a + b
                buf[start + k + half] = a - b
        size *= 2


@_jit
def _dft(x, inverse):
    """The unnormalized DFT of the 1-D complex128 array ``x`` (a fresh array)."""
    n = x.size
    if n & (n - 1) == 0:
        out = x.copy()
        if n > 1:
            _radix2(out, inverse)
        return out
    # Bluestein: X_k = conj(c_k) * sum_j (x_j conj(c_j)) c_(k-j), c_j = exp(i pi j^2 / n)
    sign = 1.0 if inverse else -1.0
    m = 1
    while m < 2 * n - 1:
        m *= 2
    chirp = np.empty(n, np.complex128)
    for j in range(n):
        angle = sign * math.pi * ((j * j) % (2 * n)) / n  # (j^2 mod 2n keeps the angle exact)
        chirp[j] = complex(math.cos(angle), math.sin(angle))
    a = np.zeros(m, np.complex128)
    b = np.zeros(m, np.complex128)
    for j in range(n):
        a[j] = x[j] * chirp[j]
        b[j] = chirp[j].conjugate()
    for j in range(1, n):
        b[m - j] = chirp[j].conjugate()
    _radix2(a, False)
    _radix2(b, False)
    for j in range(m):
        a[j] *= b[j]
    _radix2(a, True)
    out = np.empty(n, np.complex128)
    for k in range(n):
        out[k] = a[k] / m * chirp[k]
    return out


@_jit
def fft_axis3(x, inverse):
    outer, n, inner = x.shape
    out = np.empty((outer, n, inner), np.complex128)
    line = np.empty(n, np.complex128)
    scale = 1.0 / n if inverse and n > 0 else 1.0
    for o in range(outer):
        for i in range(inner):
            for k in range(n):
                line[k] = x[o, k, i]
            res = _dft(line, inverse)
            for k in range(n):
                out[o, k, i] = res[k] * scale
    return out


@_jit
def fit_axis3(x, n):
    outer, m, inner = x.shape
    out = np.zeros((outer, n, inner), x.dtype)
    keep = min(m, n)
    for o in range(outer):
        for k in range(keep):
            for i in range(inner):
                out[o, k, i] = x[o, k, i]
    return out


@_jit
def hermitian_axis3(x, n):
    outer, m, inner = x.shape  # m == n // 2 + 1 (the caller fits it first)
    out = np.zeros((outer, n, inner), np.complex128)
    for o in range(outer):
        for i in range(inner):
            for k in range(m):
                out[o, k, i] = x[o, k, i]
            for k in range(1, (n + 1) // 2):
                out[o, n - k, i] = x[o, k, i].conjugate()
    return out
