"""Special functions as elementwise primitives: ``lgamma``, ``digamma``, ``erf``, ``erfc``,
``erfinv`` and the Hurwitz ``zeta(x, q)``. The reference kernels are SciPy's; compiled code
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
