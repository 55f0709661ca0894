"""Special functions as elementwise primitives: ``lgamma``, ``digamma``, ``erf``, ``erfc``,
``erfinv``, the Hurwitz ``zeta(x, q)`` and ``random_gamma_grad(alpha, sample)`` (the derivative
of a gamma sample in its shape parameter). The reference kernels are SciPy's (the last one a
NumPy series); compiled code
computes them with ``backends/codegen/special.py``. As TensorFlow's (Eigen's) kernels:
``lgamma`` is inf and ``digamma`` NaN at the non-positive integers, ``erfinv`` is +-inf at
+-1 and NaN outside [-1, 1], ``zeta`` is inf at x = 1 and NaN for x < 1."""
from __future__ import annotations

import numpy as np
import scipy.special as _sp

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.elementwise import binary, unary


def _same_dtype(fn):
    """``fn`` on an array, the result in the input's dtype (SciPy computes float32 inputs in
    float32 or float64 depending on the function)."""
    def kernel(*xs):
        return np.asarray(fn(*xs)).astype(np.asarray(xs[0]).dtype, copy=False)
    return kernel


def _digamma(x):
    x = np.asarray(x)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, _sp.psi(x))


F = dt.FLOATS
lgamma_op = unary("lgamma", _same_dtype(_sp.gammaln), F,
                  "log|Gamma(x)|, the log of the absolute value of the gamma function.",
                  lo=0.3, hi=4.0)
digamma_op = unary("digamma", _same_dtype(_digamma), F,
                   "psi(x), the derivative of lgamma.", lo=0.3, hi=4.0)
erf_op = unary("erf", _same_dtype(_sp.erf), F, "The error function 2/sqrt(pi) * integral of "
               "exp(-t**2) from 0 to x.")
erfc_op = unary("erfc", _same_dtype(_sp.erfc), F, "1 - erf(x), accurate for large x.")
erfinv_op = unary("erfinv", _same_dtype(_sp.erfinv), F,
                  "The inverse of erf on [-1, 1] (+-inf at +-1).", lo=-0.95, hi=0.95)
zeta_op = binary("zeta", _same_dtype(_sp.zeta), F,
                 "The Hurwitz zeta function: the sum over k >= 0 of (k + q)**-x.", lo=1.2,
                 hi=4.0)


def _random_gamma_grad(alpha, x):
    """d x / d alpha of Gamma(alpha, 1) samples ``x`` at a fixed CDF value, -(dP/da) / (dP/dx)
    of the regularized incomplete gamma P(a, x) = x**a e**-x sum_n x**n / Gamma(a + n + 1):
    the ratio to the density is sum_n r_n (log x - psi(a + n + 1)) with r_0 = x / a and
    r_n = r_(n-1) x / (a + n), summed for all elements together until each has converged."""
    dtype = np.result_type(alpha, x)
    a, x = (np.asarray(v, np.float64) for v in np.broadcast_arrays(alpha, x))
    bad, zero = ~((a > 0) & (x >= 0) & (x < np.inf)), x == 0
    a, x = np.where(bad, 1.0, a), np.where(bad | zero, 1.0, x)
    log_x, psi, r = np.log(x), _sp.psi(a + 1.0), x / a
    total = r * (log_x - psi)
    n, live = 1.0, np.ones(a.shape, bool)
    while live.any() and n < 1e7:
        r = np.where(live, r * x / (a + n), 0.0)
        psi = psi + 1.0 / (a + n)
        term = r * (log_x - psi)
        total = total + term
        live &= ~((a + n > x) & (np.abs(term) <= 1.1e-17 * np.abs(total)))
        n += 1.0
    out = np.where(bad, np.nan, np.where(zero, 0.0, -total))
    return out.astype(dtype, copy=False)


random_gamma_grad_op = binary(
    "random_gamma_grad", _random_gamma_grad, F,
    "d sample / d alpha of Gamma(alpha, 1) samples at a fixed value of their CDF (the implicit "
    "reparameterization gradient of tf.random.gamma); NaN unless alpha > 0 and sample >= 0.",
    lo=0.3, hi=4.0)
