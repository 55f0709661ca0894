"""Special functions (``tf.math.lgamma``, ``digamma``, ``erf``, ``erfc``, ``erfinv``,
``zeta``, ``polygamma``): elementwise primitives (``ir/ops/special.py``) with their gradients
(``autodiff/special_vjps.py``); ``polygamma`` is composed from ``digamma``, ``lgamma`` and
``zeta``. Also ``tf.math.cumulative_logsumexp`` (``ir/ops/logsumexp.py``) and the
zero-safe ``xdivy``, ``xlog1py``, ``reciprocal_no_nan`` and ``log_sigmoid``."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ops import math_ops as _m

__all__ = ["lgamma", "digamma", "erf", "erfc", "erfinv", "zeta", "polygamma",
           "cumulative_logsumexp", "xdivy", "xlog1py", "reciprocal_no_nan", "log_sigmoid"]


def lgamma(x: Any, name: str | None = None) -> Tensor:
    """log|Gamma(x)| elementwise (inf at 0, -1, -2, ...).

    >>> import stagecraft as tf
    >>> [round(v, 6) for v in tf.math.lgamma([0.5, 3.0]).numpy().tolist()]
    [0.572365, 0.693147]
    """
    return bind(OPS["lgamma"], x)


def digamma(x: Any, name: str | None = None) -> Tensor:
    """psi(x), the derivative of lgamma (NaN at 0, -1, -2, ...).

    >>> import stagecraft as tf
    >>> round(float(tf.math.digamma(1.0)), 6)
    -0.577216
    """
    return bind(OPS["digamma"], x)


def erf(x: Any, name: str | None = None) -> Tensor:
    """The Gauss error function.

    >>> import stagecraft as tf
    >>> round(float(tf.math.erf(1.0)), 6)
    0.842701
    """
    return bind(OPS["erf"], x)


def erfc(x: Any, name: str | None = None) -> Tensor:
    """The complementary error function 1 - erf(x), accurate where erf(x) is close to 1.

    >>> import stagecraft as tf
    >>> print(f"{float(tf.math.erfc(tf.constant(10.0, tf.float64))):.6e}")
    2.088488e-45
    """
    return bind(OPS["erfc"], x)


def erfinv(x: Any, name: str | None = None) -> Tensor:
    """The inverse error function: ``erf(erfinv(x)) == x`` on (-1, 1); +-inf at +-1, NaN
    outside.

    >>> import stagecraft as tf
    >>> round(float(tf.math.erfinv(0.5)), 6)
    0.476936
    """
    return bind(OPS["erfinv"], x)


def zeta(x: Any, q: Any, name: str | None = None) -> Tensor:
    """The Hurwitz zeta function, the sum over k >= 0 of ``(k + q) ** -x`` (x > 1).

    >>> import stagecraft as tf
    >>> round(float(tf.math.zeta(2.0, 1.0)), 6)   # pi**2 / 6
    1.644934
    """
    return bind(OPS["zeta"], x, q)


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The ``a``-th derivative of digamma at ``x``: ``digamma(x)`` for ``a == 0``, else
    ``(-1)**(a + 1) * a! * zeta(a + 1, x)``; NaN where ``a`` is not a non-negative integer.
    Differentiable in ``x``.

    >>> import stagecraft as tf
    >>> round(float(tf.math.polygamma(1.0, 1.0)), 6)   # pi**2 / 6
    1.644934
    """
    x = convert_to_tensor(x)
    a = _m.cast(convert_to_tensor(a, x.dtype), x.dtype)
    n1 = _m.add(a, 1.0)
    sign = _m.subtract(1.0, _m.multiply(2.0, _m.floormod(n1, 2.0)))
    higher = _m.multiply(_m.multiply(sign, _m.exp(lgamma(n1))), zeta(n1, x))
    value = _m.where(_m.equal(a, 0.0), digamma(x), higher)
    valid = _m.logical_and(_m.greater_equal(a, 0.0), _m.equal(a, _m.floor(a)))
    return _m.where(valid, value, float("nan"))


def cumulative_logsumexp(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Tensor:
    """log(cumsum(exp(x))) along ``axis``, accumulated with logaddexp so that it neither
    overflows nor loses small terms; ``exclusive`` starts from log(0) = -inf, ``reverse`` from
    the end. Its gradient (to any order) is computed with exp and cumsum and overflows where
    one line's outputs spread over more than about 709 (float64) or 88 (float32); TensorFlow's
    log-domain gradient does not.

    >>> import stagecraft as tf
    >>> x = tf.math.log(tf.constant([1.0, 2.0, 3.0], tf.float64))
    >>> tf.exp(tf.math.cumulative_logsumexp(x)).numpy().round(12).tolist()
    [1.0, 3.0, 6.0]
    >>> tf.math.cumulative_logsumexp([-1000.0, 0.0], exclusive=True).numpy().tolist()
    [-inf, -1000.0]
    """
    return bind(OPS["cumulative_logsumexp"], x, axis=int(axis), exclusive=bool(exclusive),
                reverse=bool(reverse))


def _where_x_zero(x: Tensor, value: Tensor) -> Tensor:
    return _m.where(_m.equal(x, 0.0), _m.multiply(x, 0.0), value)


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y``, and 0 where ``x`` is 0 (even where ``y`` is 0 too); gradients stay finite
    there.

    >>> import stagecraft as tf
    >>> tf.math.xdivy([0.0, 3.0], [0.0, 2.0]).numpy().tolist()
    [0.0, 1.5]
    """
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    safe_y = _m.where(_m.equal(x, 0.0), _m.add(_m.multiply(y, 0.0), 1.0), y)
    return _where_x_zero(x, _m.divide(x, safe_y))


def xlog1py(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * log1p(y)``, and 0 where ``x`` is 0 (even where ``y`` is -1).

    >>> import stagecraft as tf
    >>> tf.math.xlog1py([0.0, 2.0], [-1.0, 0.0]).numpy().tolist()
    [0.0, 0.0]
    """
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    safe_y = _m.where(_m.equal(x, 0.0), _m.multiply(y, 0.0), y)
    return _where_x_zero(x, _m.multiply(x, _m.log1p(safe_y)))


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """``1 / x``, and 0 where ``x`` is 0.

    >>> import stagecraft as tf
    >>> tf.math.reciprocal_no_nan([0.0, 4.0]).numpy().tolist()
    [0.0, 0.25]
    """
    x = convert_to_tensor(x)
    zero = _m.equal(x, 0.0)
    inverse = _m.divide(1.0, _m.where(zero, _m.add(_m.multiply(x, 0.0), 1.0), x))
    return _m.where(zero, _m.multiply(x, 0.0), inverse)


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """``log(sigmoid(x))`` computed as ``-softplus(-x)``, without overflow.

    >>> import stagecraft as tf
    >>> [round(v, 6) for v in tf.math.log_sigmoid([-1000.0, 0.0]).numpy().tolist()]
    [-1000.0, -0.693147]
    """
    return _m.negative(_m.softplus(_m.negative(convert_to_tensor(x))))
