"""Math op wrappers (``stagecraft.add``, ``stagecraft.math.*``): arithmetic, comparisons,
logic, reductions, scans, matmul, casts and ``where``."""
from __future__ import annotations

from typing import Any, Sequence

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.eager.tensor import Tensor

_O = dict(OPS)  # a plain dict: faster lookups than the read-only mapping


# ----------------------------------------------------------------- elementwise binary

def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x + y with broadcasting; Python scalars take the tensor's dtype.

    >>> import stagecraft as tf
    >>> tf.add(tf.constant([1, 2]), 1).numpy().tolist()
    [2, 3]
    """
    return bind(_O["add"], x, y)


def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x - y with broadcasting."""
    return bind(_O["subtract"], x, y)


def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x * y with broadcasting."""
    return bind(_O["multiply"], x, y)


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """True division; integer tensors give float64 (int32 / int32 -> float64) like TF.

    >>> import stagecraft as tf
    >>> tf.constant([3, 4]) / tf.constant([2, 2])
    <stagecraft.Tensor: shape=(2,), dtype=float64, numpy=array([1.5, 2. ])>
    """
    return bind(_O["divide"], x, y)


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Same as ``truediv``: x / y."""
    return bind(_O["divide"], x, y)


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Floor division x // y (rounds toward negative infinity)."""
    return bind(_O["floordiv"], x, y)


def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x % y with the sign of y, like Python."""
    return bind(_O["floormod"], x, y)


mod = floormod


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    """Elementwise x ** y."""
    return bind(_O["pow"], x, y)


def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise max(x, y)."""
    return bind(_O["maximum"], x, y)


def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise min(x, y)."""
    return bind(_O["minimum"], x, y)


def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x == y as a bool tensor."""
    return bind(_O["equal"], x, y)


def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x != y as a bool tensor."""
    return bind(_O["not_equal"], x, y)


def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x < y."""
    return bind(_O["less"], x, y)


def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x <= y."""
    return bind(_O["less_equal"], x, y)


def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x > y."""
    return bind(_O["greater"], x, y)


def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x >= y."""
    return bind(_O["greater_equal"], x, y)


def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise AND of two bool tensors."""
    return bind(_O["logical_and"], x, y)


def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise OR of two bool tensors."""
    return bind(_O["logical_or"], x, y)


def logical_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise XOR of two bool tensors."""
    return bind(_O["logical_xor"], x, y)


def logical_not(x: Any, name: str | None = None) -> Tensor:
    """Elementwise NOT of a bool tensor."""
    return bind(_O["logical_not"], x)


# The operators on integer tensors: TensorFlow's bitwise ops.
_BITWISE = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "not": "invert"}


def _bool_operator(symbol: str, op: str, *args: Any) -> Tensor:
    ts = [convert_to_tensor(a) if not isinstance(a, (bool, int)) else a for a in args]
    first = next((t for t in ts if isinstance(t, Tensor)), None)
    if first is not None and first.dtype.is_integer:
        return bind(_O[_BITWISE[op]], *args)
    for t in ts:
        if isinstance(t, Tensor) and t.dtype != _dt.bool_:
            raise TypeError(f"'{symbol}' is defined for bool tensors (logical {op}) and "
                            f"integer tensors (tf.bitwise); got a {t.dtype.name} tensor.")
    return bind(_O["logical_" + op], *args)


def and_(x: Any, y: Any) -> Tensor:
    """``x & y``: logical on bool tensors, bitwise on integer ones (the operator)."""
    return _bool_operator("&", "and", x, y)


def or_(x: Any, y: Any) -> Tensor:
    """``x | y``: logical on bool tensors, bitwise on integer ones."""
    return _bool_operator("|", "or", x, y)


def xor_(x: Any, y: Any) -> Tensor:
    """``x ^ y``: logical on bool tensors, bitwise on integer ones."""
    return _bool_operator("^", "xor", x, y)


def invert_(x: Any) -> Tensor:
    """``~x``: logical NOT of a bool tensor, bitwise inversion of an integer one."""
    return _bool_operator("~", "not", x)


# ------------------------------------------------------------------ elementwise unary

def negative(x: Any, name: str | None = None) -> Tensor:
    """Elementwise -x."""
    return bind(_O["negative"], x)


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    """Elementwise |x|."""
    return bind(_O["abs"], x)


def sign(x: Any, name: str | None = None) -> Tensor:
    """Elementwise sign (-1, 0 or 1)."""
    return bind(_O["sign"], x)


def square(x: Any, name: str | None = None) -> Tensor:
    """Elementwise x * x."""
    return bind(_O["square"], x)


def exp(x: Any, name: str | None = None) -> Tensor:
    """Elementwise e ** x (float tensors only)."""
    return bind(_O["exp"], x)


def log(x: Any, name: str | None = None) -> Tensor:
    """Elementwise natural logarithm."""
    return bind(_O["log"], x)


def log1p(x: Any, name: str | None = None) -> Tensor:
    """Elementwise log(1 + x)."""
    return bind(_O["log1p"], x)


def sqrt(x: Any, name: str | None = None) -> Tensor:
    """Elementwise square root."""
    return bind(_O["sqrt"], x)


def rsqrt(x: Any, name: str | None = None) -> Tensor:
    """Elementwise 1 / sqrt(x)."""
    return bind(_O["rsqrt"], x)


def sin(x: Any, name: str | None = None) -> Tensor:
    """Elementwise sine."""
    return bind(_O["sin"], x)


def cos(x: Any, name: str | None = None) -> Tensor:
    """Elementwise cosine."""
    return bind(_O["cos"], x)


def tanh(x: Any, name: str | None = None) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return bind(_O["tanh"], x)


def sigmoid(x: Any, name: str | None = None) -> Tensor:
    """Elementwise 1 / (1 + exp(-x))."""
    return bind(_O["sigmoid"], x)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """Elementwise log(1 + exp(x))."""
    return bind(_O["softplus"], features)


def floor(x: Any, name: str | None = None) -> Tensor:
    """Elementwise floor."""
    return bind(_O["floor"], x)


def ceil(x: Any, name: str | None = None) -> Tensor:
    """Elementwise ceiling."""
    return bind(_O["ceil"], x)


def round(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    """Rounds half to even, like TensorFlow and NumPy.

    >>> import stagecraft as tf
    >>> tf.round(tf.constant([0.5, 1.5, 2.5])).numpy().tolist()
    [0.0, 2.0, 2.0]
    """
    return bind(_O["round"], x)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Converts to ``dtype``; floats truncate toward zero when cast to integers.

    >>> import stagecraft as tf
    >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy().tolist()
    [1, -1]
    """
    d = _dt.as_dtype(dtype)
    x = convert_to_tensor(x) if not isinstance(x, Tensor) else x
    if x.dtype == d:
        return x
    return bind(_O["cast"], x, dtype=d)


def add_n(inputs: Sequence[Any], name: str | None = None) -> Tensor:
    """Sum of a list of same-shape, same-dtype tensors."""
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list of tensors.")
    total = inputs[0] if isinstance(inputs[0], Tensor) else convert_to_tensor(inputs[0])
    for x in inputs[1:]:
        total = add(total, x)
    return total


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Tensor:
    """Clamps values into [clip_value_min, clip_value_max]."""
    return minimum(maximum(t, clip_value_min), clip_value_max)


# ----------------------------------------------------------------------- reductions

def _axes(axis: Any) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    return (int(axis),)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Sum over ``axis`` (an int, a list of ints, or None for all axes).

    >>> import stagecraft as tf
    >>> tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), axis=1).numpy().tolist()
    [3, 7]
    """
    return bind(_O["reduce_sum"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """Mean over ``axis``; integer inputs give a truncated integer mean like TensorFlow."""
    return bind(_O["reduce_mean"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Maximum over ``axis``; empty reductions give -inf (floats) or the dtype's minimum."""
    return bind(_O["reduce_max"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Minimum over ``axis``."""
    return bind(_O["reduce_min"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """Product over ``axis``."""
    return bind(_O["reduce_prod"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Logical AND over ``axis`` of a bool tensor."""
    return bind(_O["reduce_all"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Logical OR over ``axis`` of a bool tensor."""
    return bind(_O["reduce_any"], input_tensor, axes=_axes(axis), keepdims=bool(keepdims))


def argmax(input: Any, axis: Any = None, output_type: Any = _dt.int64,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Index of the largest value along ``axis`` (default 0), as int64 by default."""
    return bind(_O["argmax"], input, axis=0 if axis is None else int(axis),
                output_type=_dt.as_dtype(output_type))


def argmin(input: Any, axis: Any = None, output_type: Any = _dt.int64,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Index of the smallest value along ``axis`` (default 0), as int64 by default."""
    return bind(_O["argmin"], input, axis=0 if axis is None else int(axis),
                output_type=_dt.as_dtype(output_type))


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Cumulative sum along ``axis``.

    >>> import stagecraft as tf
    >>> tf.cumsum([1, 2, 3], exclusive=True).numpy().tolist()
    [0, 1, 3]
    """
    return bind(_O["cumsum"], x, axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse))


def cumprod(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """Cumulative product along ``axis``."""
    return bind(_O["cumprod"], x, axis=int(axis), exclusive=bool(exclusive),
                reverse=bool(reverse))


# --------------------------------------------------------------------------- matmul

def _conjugated(x: Any, adjoint: bool) -> Any:
    """``x`` conjugated when ``adjoint`` asks for it and it is complex."""
    if not adjoint:
        return x
    x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    return bind(_O["conj"], x) if x.dtype.is_complex else x


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, output_type: Any = None, name: str | None = None) -> Tensor:
    """Matrix product over the last two dimensions; leading batch dimensions broadcast.
    ``adjoint_a``/``adjoint_b`` conjugate-transpose a complex operand (transpose a real one).

    >>> import stagecraft as tf
    >>> tf.matmul([[1., 2.]], [[3.], [4.]]).numpy().tolist()
    [[11.0]]
    """
    a, b = _conjugated(a, adjoint_a), _conjugated(b, adjoint_b)
    return bind(_O["matmul"], a, b, transpose_a=bool(transpose_a or adjoint_a),
                transpose_b=bool(transpose_b or adjoint_b))


# ---------------------------------------------------------------------------- where

def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """``where(c, x, y)`` picks x where c is true else y (broadcasting all three);
    ``where(c)`` returns the int64 coordinates of the true elements.

    >>> import stagecraft as tf
    >>> tf.where([True, False], 1., 2.).numpy().tolist()
    [1.0, 2.0]
    """
    if x is None and y is None:
        return bind(_O["where_indices"], condition)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither (to get the indices of the true "
                         "elements of condition).")
    return bind(_O["select"], condition, x, y)



def _unary_wrapper(op: str, doc: str) -> Any:
    def wrapper(x: Any, name: str | None = None) -> Tensor:
        return bind(_O[op], x)
    wrapper.__name__ = wrapper.__qualname__ = op
    wrapper.__doc__ = doc
    return wrapper


expm1 = _unary_wrapper("expm1", """Elementwise exp(x) - 1, accurate for small x.

    >>> import stagecraft as tf
    >>> float(tf.math.expm1(1e-10))
    1.000000013351432e-10
    """)
tan = _unary_wrapper("tan", "Elementwise tangent.")
atan = _unary_wrapper("atan", "Elementwise inverse tangent.")
asin = _unary_wrapper("asin", "Elementwise inverse sine.")
acos = _unary_wrapper("acos", "Elementwise inverse cosine.")
sinh = _unary_wrapper("sinh", "Elementwise hyperbolic sine.")
cosh = _unary_wrapper("cosh", "Elementwise hyperbolic cosine.")
asinh = _unary_wrapper("asinh", "Elementwise inverse hyperbolic sine.")
acosh = _unary_wrapper("acosh", "Elementwise inverse hyperbolic cosine.")
atanh = _unary_wrapper("atanh", "Elementwise inverse hyperbolic tangent.")
reciprocal = _unary_wrapper("reciprocal", "Elementwise 1 / x.")
softsign = _unary_wrapper("softsign", "Elementwise x / (1 + |x|).")
is_finite = _unary_wrapper("is_finite", """True where x is neither infinite nor NaN.

    >>> import stagecraft as tf
    >>> tf.math.is_finite([1.0, float("inf"), float("nan")]).numpy().tolist()
    [True, False, False]
    """)
is_nan = _unary_wrapper("is_nan", "True where x is NaN.")
is_inf = _unary_wrapper("is_inf", "True where x is +inf or -inf.")


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """The angle of the point (x, y): elementwise arctan(y / x) in the right quadrant.

    >>> import stagecraft as tf
    >>> f"{float(tf.math.atan2(1.0, -1.0)):.4f}"
    '2.3562'
    """
    return bind(_O["atan2"], y, x)


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise (x - y) * (x - y)."""
    return bind(_O["squared_difference"], x, y)


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise x * log(y), 0 where x is 0.

    >>> import stagecraft as tf
    >>> tf.math.xlogy([0.0, 2.0], [0.0, 1.0]).numpy().tolist()
    [0.0, 0.0]
    """
    return bind(_O["xlogy"], x, y)


def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Division rounding toward zero (``-7 / 2`` is ``-3``, where ``//`` gives ``-4``).

    >>> import stagecraft as tf
    >>> tf.truncatediv([-7, 7], [2, 2]).numpy().tolist()
    [-3, 3]
    """
    return bind(_O["truncatediv"], x, y)


__all__ = [n for n in dir() if not n.startswith("_") and not n.endswith("_") and n not in (
    "annotations", "Any", "Sequence", "bind", "convert_to_tensor", "OPS",
    "Tensor")]
# TensorFlow exports these in tf.math only (not at the top level), and truncatediv at the top
# level only.
MATH_ONLY = ("expm1", "reciprocal", "softsign", "is_finite", "is_nan", "is_inf",
             "squared_difference", "xlogy")
TOP_LEVEL_ONLY = ("truncatediv",)
