"""Numba kernels of ``random_gamma``, ``random_poisson`` and ``random_binomial``
(``ir/ops/rejection.py``, whose
per-element samplers they compile): the reference kernels' values, element for element."""
from __future__ import annotations

import types
from typing import Callable

import numba
import numpy as np

from stagecraft.ir.ops import rejection
from stagecraft.ir.ops.philox import key_words

_JIT = dict(cache=True, error_model="numpy", nogil=True)


def compiled_with(jit: Callable, fn: Callable, **callees: Callable) -> Callable:
    """``jit(fn)`` with the global names in ``callees`` bound to compiled functions (Numba
    resolves a function's globals when compiling it, and the plain Python ones it calls
    cannot be typed)."""
    scope = {**fn.__globals__, **callees}
    return jit(types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                  fn.__closure__))


_key_words = numba.njit(**_JIT)(key_words)
_uniform_pair = compiled_with(numba.njit(**_JIT), rejection.uniform_pair,
                              philox=numba.njit(**_JIT)(rejection.philox))
_gamma_one = compiled_with(numba.njit(**_JIT), rejection.gamma_one, uniform_pair=_uniform_pair)
_poisson_one = compiled_with(numba.njit(**_JIT), rejection.poisson_one,
                             uniform_pair=_uniform_pair)
_binomial_one = compiled_with(numba.njit(**_JIT), rejection.binomial_one,
                              uniform_pair=_uniform_pair)


@numba.njit(**_JIT)
def rejection_sample_into(out, alpha, seed, poisson):
    """out (flat, shape + alpha.shape elements): Gamma(alpha[j % alpha.size]) samples, or
    Poisson(alpha[j % alpha.size]) counts when ``poisson``."""
    k0, k1, c2, c3 = _key_words(seed)
    a = alpha.reshape(alpha.size)
    of = out.reshape(out.size)
    for j in range(of.size):
        if poisson:
            of[j] = _poisson_one(np.float64(a[j % a.size]), np.uint64(j), k0, k1, c2, c3)
        else:
            of[j] = _gamma_one(np.float64(a[j % a.size]), np.uint64(j), k0, k1, c2, c3)


@numba.njit(**_JIT)
def binomial_sample_into(out, counts, probs, seed):
    """out (flat, the shape counts and probs share): Binomial(counts[j], probs[j]) samples."""
    k0, k1, c2, c3 = _key_words(seed)
    n = counts.reshape(counts.size)
    p = probs.reshape(probs.size)
    of = out.reshape(out.size)
    for j in range(of.size):
        of[j] = _binomial_one(np.float64(n[j]), np.float64(p[j]), np.uint64(j), k0, k1, c2, c3)
