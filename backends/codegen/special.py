"""Scalar special functions for compiled code: ``lgamma``, ``digamma``, ``erf``, ``erfc``,
``erfinv``, the Hurwitz ``zeta`` and ``random_gamma_grad``, written with :mod:`math` only, so
that the same source runs as plain Python (the CUDA simulator), under ``numba.njit`` (the CPU backend: generated code
calls them as ``K.<name>``) and as CUDA device functions (``numba_cuda`` binds the name ``K``
of its kernels to those). The op table's reference kernels use SciPy's; these agree with them
to a few ulps of float64 (tests/frontend/test_special_ops.py).

>>> round(digamma(1.0), 12), round(erfinv(0.5), 12), round(zeta(2.0, 1.0), 12)
(-0.577215664902, 0.476936276204, 1.644934066848)
"""
from __future__ import annotations

import math

from stagecraft.backends.codegen.half import round_to  # noqa: F401 (K.round_to: half dtypes)

_PI = math.pi
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_EPS = 2.220446049250313e-16


def lgamma(x):
    """log|Gamma(x)| (inf at the non-positive integers)."""
    if x <= 0.0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


def erf(x):
    return math.erf(x)


def erfc(x):
    return math.erfc(x)


def digamma(x):
    """psi(x) = d/dx log Gamma(x): reflection for x < 0, the recurrence psi(x) = psi(x + 1) -
    1/x up to x >= 10, then the asymptotic series; NaN at the non-positive integers (as
    TensorFlow's Eigen kernel)."""
    if x != x or x == math.inf:
        return x
    shift = 0.0
    if x <= 0.0:
        if x == math.floor(x):
            return math.nan
        # psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi and x - round(x) is exact
        shift = -_PI / math.tan(_PI * (x - math.floor(x + 0.5)))
        x = 1.0 - x
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    y = 1.0 / (x * x)
    series = y * (1.0 / 12 - y * (1.0 / 120 - y * (1.0 / 252 - y * (
        1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y * (1.0 / 12)))))))
    return shift + math.log(x) - 0.5 / x - series


def erfinv(y):
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside): Giles' single-precision
    polynomial ("Approximating the erfinv function", 2010), then Newton steps on erf (or on
    log erfc near +-1, where 1 - |y| is exact) to full double precision."""
    if y != y or y < -1.0 or y > 1.0:
        return math.nan
    a = abs(y)
    if a == 1.0:
        return math.copysign(math.inf, y)
    w = -math.log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    x = p * a
    for _ in range(8):   # two steps from the polynomial's 1e-7; more in the far tails
        slope = _TWO_OVER_SQRT_PI * math.exp(-x * x)
        if slope == 0.0:
            break
        if a > 0.5:   # on log erfc, nearly linear in the tail
            c = math.erfc(x)
            step = (math.log(c) - math.log(1.0 - a)) * c / slope
        else:
            step = (a - math.erf(x)) / slope
        x += step
        if abs(step) <= 1e-15 * x:
            break
    return math.copysign(x, y)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)**-x for x > 1 (inf at x = 1, NaN for x < 1):
    direct terms until q + k >= 9, then the Euler-Maclaurin tail."""
    if x == 1.0:
        return math.inf
    if x < 1.0 or x != x or q != q:
        return math.nan
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf
        if x != math.floor(x):
            return math.nan   # a negative base to a fractional power
    s = math.pow(q, -x)
    a = q
    b = 0.0
    i = 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = math.pow(a, -x)
        s += b
        if abs(b / s) < _EPS:
            return s
    w = a
    s += b * w / (x - 1.0) - 0.5 * b
    fac = 1.0
    k = 0.0
    for j in range(12):
        fac *= x + k
        b /= w
        t = fac * b / _ZETA_A[j]
        s += t
        if abs(t / s) < _EPS:
            return s
        k += 1.0
        fac *= x + k
        b /= w
        k += 1.0
    return s


_GAMMA_GRAD_TERMS = 10 ** 7   # the series needs about x - a + 40 sqrt(x) terms


def random_gamma_grad(a, x):
    """d x / d a of a Gamma(a, 1) sample ``x`` at a fixed value of its CDF P(a, x) (the
    implicit reparameterization gradient): -(dP/da) / (dP/dx), from the series
    P(a, x) = x**a e**-x sum_n x**n / Gamma(a + n + 1), whose ratio to the density is
    sum_n r_n with r_0 = x / a, r_n = r_(n-1) x / (a + n) (no overflow), each term times
    log x - digamma(a + n + 1). NaN unless a > 0 and x >= 0; 0 at x = 0."""
    if not a > 0.0 or not x >= 0.0 or x == math.inf:
        return math.nan
    if x == 0.0:
        return 0.0
    log_x = math.log(x)
    psi = digamma(a + 1.0)
    r = x / a
    total = r * (log_x - psi)
    n = 1.0
    while n < _GAMMA_GRAD_TERMS:
        r *= x / (a + n)
        psi += 1.0 / (a + n)
        term = r * (log_x - psi)
        total += term
        if a + n > x and abs(term) <= _EPS * 0.05 * abs(total):
            break
        n += 1.0
    return -total
