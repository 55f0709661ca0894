"""VJP rule of ``cumulative_logsumexp``: d out_j / d x_i = exp(x_i - out_j) for the i that
out_j sums, so the gradient is ``exp(x - M) * cumsum(g * exp(M - out))`` accumulated the other
way, with ``M`` the line's largest finite output (a constant shift: the value does not depend
on it, so no gradient flows through it). Written with exp and cumsum, it holds to every order.
Unlike TensorFlow's log-domain rule it overflows when one line's outputs spread over more than
exp's range (about 709 in float64, 88 in float32). ``RULES`` maps the op to its rule;
:mod:`stagecraft.autodiff.vjps` adds it to the table (this module does not import it, so the
two stay free of import cycles)."""
from __future__ import annotations

from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m


def _cumulative_logsumexp(g, out, x, axis, exclusive, reverse):
    finite = m.is_finite(out)
    top = m.reduce_max(m.where(finite, out, float("-inf")), axis=axis, keepdims=True)
    top = a.stop_gradient(m.where(m.is_finite(top), top, 0.0))
    terms = m.where(finite, m.multiply(g, m.exp(m.subtract(top, m.where(finite, out, top)))),
                    0.0)
    acc = m.cumsum(terms, axis=axis, exclusive=exclusive, reverse=not reverse)
    return (m.multiply(m.exp(m.subtract(x, top)), acc),)


RULES = {"cumulative_logsumexp": _cumulative_logsumexp}
