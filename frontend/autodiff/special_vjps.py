"""VJP rules of the special functions (TensorFlow's): lgamma' = digamma, digamma' =
polygamma(1, .) = zeta(2, .), erf' = 2/sqrt(pi) exp(-x^2), erfinv' = sqrt(pi)/2 exp(erfinv^2),
zeta's derivative in q, -x zeta(x + 1, q) (none in x, as in TensorFlow), and random_gamma's in
alpha: TensorFlow's implicit reparameterization, the sample moved along with alpha at a fixed
value of its CDF (``random_gamma_grad``), summed over the sample dimensions (its own derivative, a second derivative in alpha, raises:
TensorFlow has none; ``vjps.UNDEFINED``). ``RULES`` maps
each op to its rule; :mod:`stagecraft.autodiff.vjps` adds them to the table (this module does
not import it, so the two stay free of import cycles)."""
from __future__ import annotations

import math

from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _lgamma(g, out, x):
    return (m.multiply(g, bind(OPS["digamma"], x)),)


def _digamma(g, out, x):
    return (m.multiply(g, bind(OPS["zeta"], m.add(a.zeros_like(x), 2.0), x)),)


def _gauss(x):
    return m.multiply(_TWO_OVER_SQRT_PI, m.exp(m.negative(m.square(x))))


def _erf(g, out, x):
    return (m.multiply(g, _gauss(x)),)


def _erfc(g, out, x):
    return (m.negative(m.multiply(g, _gauss(x))),)


def _erfinv(g, out, x):
    return (m.multiply(g, m.multiply(0.5 * math.sqrt(math.pi), m.exp(m.square(out)))),)


def _zeta(g, out, x, q):
    dq = m.multiply(m.negative(x), bind(OPS["zeta"], m.add(x, 1.0), q))
    dq = m.multiply(g, dq)
    return None, dq if dq.shape == q.shape and dq.shape.is_fully_defined() else \
        bind(OPS["sum_like"], dq, q)


def _random_gamma(g, out, seed, alpha, shape):
    # out has shape `shape + alpha.shape`: the leading sample dimensions sum away
    d_alpha = m.multiply(g, bind(OPS["random_gamma_grad"], alpha, out))
    return None, bind(OPS["sum_like"], d_alpha, alpha)


RULES = {"lgamma": _lgamma, "digamma": _digamma, "erf": _erf, "erfc": _erfc, "erfinv": _erfinv,
         "zeta": _zeta, "random_gamma": _random_gamma}
