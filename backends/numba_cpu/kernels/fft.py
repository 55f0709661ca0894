"""FFT kernels for compiled code (``ir/ops/fft.py``; Numba has no ``np.fft``): an iterative
radix-2 transform for power-of-two lengths and Bluestein's chirp-z algorithm (two radix-2
transforms of a power-of-two length >= 2n - 1 per line, after one per call for the chirp) for
every other length, computed in complex128 with twiddle factors computed once per call. About
1.4x NumPy's pocketfft for a power of two and 11x for other lengths (64 lines of 1024 and of 1000
points).

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
def _twiddles(n, inverse):
    """exp(-+2 pi i k / n) for k < n / 2: the factors of every radix-2 stage of length n."""
    sign = 1.0 if inverse else -1.0
    tw = np.empty(max(n // 2, 1), np.complex128)
    for k in range(tw.size):
        angle = sign * 2.0 * math.pi * k / n
        tw[k] = complex(math.cos(angle), math.sin(angle))
    return tw


@_jit
def _radix2(buf, tw):
    """In-place unnormalized DFT of ``buf`` (length n a power of two; ``tw``: n's twiddles)."""
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
    size = 2
    while size <= n:
        half = size // 2
        stride = n // size
        for start in range(0, n, size):
            for k in range(half):
                a = buf[start + k]
                b = buf[start + k + half] * tw[k * stride]
                buf[start + k] = a + b
                buf[start + k + half] = a - b
        size *= 2


@_jit
def _bluestein_plan(n, inverse):
    """(m, chirp, the DFT of the conjugate chirp, m's twiddles, m's inverse twiddles) for
    Bluestein's algorithm: X_k = conj(c_k) * sum_j (x_j conj(c_j)) c_(k-j), c_j = exp(i pi
    j^2 / n), the sum a circular convolution of power-of-two length m >= 2n - 1."""
    sign = 1.0 if inverse else -1.0
    m = 1
    while m < 2 * n - 1:
        m *= 2
    chirp = np.empty(n, np.complex128)
    for j in range(n):
        angle = sign * math.pi * ((j * j) % (2 * n)) / n  # (j^2 mod 2n keeps the angle exact)
        chirp[j] = complex(math.cos(angle), math.sin(angle))
    b = np.zeros(m, np.complex128)
    for j in range(n):
        b[j] = chirp[j].conjugate()
    for j in range(1, n):
        b[m - j] = chirp[j].conjugate()
    forward, backward = _twiddles(m, False), _twiddles(m, True)
    _radix2(b, forward)
    return m, chirp, b, forward, backward


@_jit
def fft_axis3(x, inverse):
    outer, n, inner = x.shape
    out = np.empty((outer, n, inner), np.complex128)
    scale = 1.0 / n if inverse and n > 0 else 1.0
    power_of_two = n & (n - 1) == 0
    tw = _twiddles(max(n, 1), inverse)
    m, chirp, b, forward, backward = _bluestein_plan(1 if power_of_two else n, inverse)
    line = np.empty(n if power_of_two else m, np.complex128)
    for o in range(outer):
        for i in range(inner):
            if power_of_two:
                for k in range(n):
                    line[k] = x[o, k, i]
                if n > 1:
                    _radix2(line, tw)
                for k in range(n):
                    out[o, k, i] = line[k] * scale
                continue
            line[:] = 0
            for k in range(n):
                line[k] = x[o, k, i] * chirp[k]
            _radix2(line, forward)
            for k in range(m):
                line[k] *= b[k]
            _radix2(line, backward)
            for k in range(n):
                out[o, k, i] = line[k] / m * chirp[k] * scale
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
