"""Elementwise primitives: unary math, binary arithmetic, comparisons, logic, casts, select."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.dtypes import DType
from stagecraft.ir.ops.infer import broadcast_all, check_dtype, check_unified
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import BINARY_SHAPES, UNARY_SHAPES, values
from stagecraft.ir.types import TensorType

OutRule = "DType | Callable[[DType], DType] | None"


def _out_dtype(rule, d: DType) -> DType:
    if rule is None:
        return d
    return rule if isinstance(rule, DType) else rule(d)


def unary(name: str, kernel: Callable, dtypes: Sequence[DType], doc: str, *, lo: float = -2.0,
          hi: float = 2.0, avoid: Sequence[float] = (), out=None, value_free: bool = False
          ) -> OpDef:
    """An elementwise op of one input whose output has the input's shape."""
    def infer(types, _op=name):
        d = check_unified(_op, ("x",), types, (0,), dtypes)
        return [TensorType(_out_dtype(out, d), types[0].shape)]

    def examples(rng, d):
        return [Example((values(rng, d, s, lo, hi, avoid),)) for s in UNARY_SHAPES]

    return OpDef(name=name, kind=Kind.ELEMENTWISE, inputs=("x",), attrs=(), infer=infer,
                 kernel=kernel, dtypes=tuple(dtypes), unify=(0,), examples=examples, doc=doc,
                 value_free=value_free)


def binary(name: str, kernel: Callable, dtypes: Sequence[DType], doc: str, *, lo: float = -2.0,
           hi: float = 2.0, rhs_nonzero: bool = False, out=None) -> OpDef:
    """An elementwise op of two same-dtype inputs with NumPy broadcasting."""
    def infer(types, _op=name):
        d = check_unified(_op, ("x", "y"), types, (0, 1), dtypes)
        return [TensorType(_out_dtype(out, d), broadcast_all(_op, types))]

    def examples(rng, d):
        return [Example((values(rng, d, a, lo, hi), values(rng, d, b, lo, hi, nonzero=rhs_nonzero)))
                for a, b in BINARY_SHAPES]

    return OpDef(name=name, kind=Kind.ELEMENTWISE, inputs=("x", "y"), attrs=(), infer=infer,
                 kernel=kernel, dtypes=tuple(dtypes), unify=(0, 1), examples=examples, doc=doc)


def _to_float(d: DType) -> DType:
    """True division's result dtype (TensorFlow's table): floats keep theirs, 8- and 16-bit
    integers give float32, 32- and 64-bit integers float64."""
    if d.is_floating or d.is_complex:
        return d
    return dt.float32 if d.size <= 2 else dt.float64


def _true_divide(x, y):
    if x.dtype.kind in "iu":  # TensorFlow casts both to the result's float dtype first
        f = np.float32 if x.dtype.itemsize <= 2 else np.float64
        return np.true_divide(x, y, dtype=f)
    return np.true_divide(x, y)


def _sigmoid(x):
    return np.exp(-np.logaddexp(0, -x))


def _int_division(fn):
    def kernel(x, y):
        # TensorFlow raises for integer division by zero (NumPy returns 0 with a warning).
        if x.dtype.kind in "iu" and not np.all(y):
            raise ZeroDivisionError("Integer division by zero.")
        return fn(x, y)
    return kernel


def _pow(x, y):
    if x.dtype.kind == "i" and np.any(np.asarray(y) < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")
    return np.power(x, y)


F, N, A, B = dt.FLOATS, dt.NUMERIC, dt.ALL, (dt.bool_,)
S = dt.SIGNED  # TensorFlow registers negative, abs, sign, round, pow and squared_difference
# for signed types only
C = dt.COMPLEX  # added where TensorFlow's CPU kernels take complex64/complex128 too

negative_op = unary("negative", np.negative, S + C, "Elementwise -x.")
abs_op = unary("abs", np.abs, S + C, "Elementwise |x|; its gradient at 0 is 0. The modulus of "
                "a complex x, as its real dtype.", avoid=(0.0,), out=lambda d: d.real_dtype)
sign_op = unary("sign", np.sign, S, "Elementwise sign: -1, 0 or 1.", avoid=(0.0,))
square_op = unary("square", np.square, N + C, "Elementwise x*x.")
exp_op = unary("exp", np.exp, F + C, "Elementwise e**x.")
log_op = unary("log", np.log, F + C, "Natural logarithm; log(0) = -inf.", lo=0.2, hi=3.0)
log1p_op = unary("log1p", np.log1p, F, "log(1 + x), accurate for small x.", lo=-0.5, hi=3.0)
sqrt_op = unary("sqrt", np.sqrt, F + C, "Elementwise square root.", lo=0.2, hi=3.0)
rsqrt_op = unary("rsqrt", lambda x: 1 / np.sqrt(x), F, "Elementwise 1 / sqrt(x).", lo=0.2, hi=3.0)
sin_op = unary("sin", np.sin, F + C, "Elementwise sine.")
cos_op = unary("cos", np.cos, F + C, "Elementwise cosine.")
tanh_op = unary("tanh", np.tanh, F + C, "Elementwise hyperbolic tangent.")
sigmoid_op = unary("sigmoid", _sigmoid, F, "Logistic function 1 / (1 + exp(-x)), computed stably.")
softplus_op = unary("softplus", lambda x: np.logaddexp(0, x), F, "log(1 + exp(x)), stably.")
relu_op = unary("relu", lambda x: np.maximum(x, 0), N,
                "max(x, 0); its gradient at 0 is 0 as in TensorFlow.", avoid=(0.0,))
floor_op = unary("floor", np.floor, F, "Largest integer not greater than x.",
                 avoid=(0.0, 1.0, -1.0))
ceil_op = unary("ceil", np.ceil, F, "Smallest integer not less than x.", avoid=(0.0, 1.0, -1.0))
round_op = unary("round", np.round, S, "Round half to even (banker's rounding), like TensorFlow.",
                 avoid=(0.5, 1.5, -0.5, -1.5))
logical_not_op = unary("logical_not", np.logical_not, B, "Elementwise NOT of a bool tensor.")
identity_op = unary("identity", lambda x: x, A, "Returns its input unchanged.")
stop_gradient_op = unary("stop_gradient", lambda x: x, A,
                         "Returns its input; no gradient flows through it.")
zeros_like_op = unary("zeros_like", np.zeros_like, A, "Zeros of the input's shape and dtype.",
                      value_free=True)
ones_like_op = unary("ones_like", np.ones_like, A, "Ones of the input's shape and dtype.",
                     value_free=True)

expm1_op = unary("expm1", np.expm1, F, "exp(x) - 1, accurate for small x.")
tan_op = unary("tan", np.tan, F + C, "Elementwise tangent.", lo=-1.2, hi=1.2)
atan_op = unary("atan", np.arctan, F, "Elementwise inverse tangent.")
asin_op = unary("asin", np.arcsin, F, "Elementwise inverse sine (of x in [-1, 1]).", lo=-0.9,
                hi=0.9)
acos_op = unary("acos", np.arccos, F, "Elementwise inverse cosine (of x in [-1, 1]).", lo=-0.9,
                hi=0.9)
sinh_op = unary("sinh", np.sinh, F + C, "Elementwise hyperbolic sine.")
cosh_op = unary("cosh", np.cosh, F + C, "Elementwise hyperbolic cosine.")
asinh_op = unary("asinh", np.arcsinh, F, "Elementwise inverse hyperbolic sine.")
acosh_op = unary("acosh", np.arccosh, F, "Elementwise inverse hyperbolic cosine (x >= 1).",
                 lo=1.2, hi=3.0)
atanh_op = unary("atanh", np.arctanh, F, "Elementwise inverse hyperbolic tangent (|x| < 1).",
                 lo=-0.9, hi=0.9)
reciprocal_op = unary("reciprocal", lambda x: 1 / x, F + C, "Elementwise 1 / x.", lo=0.3, hi=2.0)
softsign_op = unary("softsign", lambda x: x / (1 + np.abs(x)), F, "x / (1 + |x|).",
                    avoid=(0.0,))
is_finite_op = unary("is_finite", np.isfinite, F, "True where x is neither infinite nor NaN.",
                     out=dt.bool_)
is_nan_op = unary("is_nan", np.isnan, F, "True where x is NaN.", out=dt.bool_)
is_inf_op = unary("is_inf", np.isinf, F, "True where x is +inf or -inf.", out=dt.bool_)

add_op = binary("add", np.add, N + C, "Elementwise x + y with broadcasting.")
subtract_op = binary("subtract", np.subtract, N + C, "Elementwise x - y with broadcasting.")
multiply_op = binary("multiply", np.multiply, N + C, "Elementwise x * y with broadcasting.")
divide_op = binary("divide", _true_divide, N + C,
                   "True division x / y; like TensorFlow, 8- and 16-bit integers give float32, "
                   "32- and 64-bit integers float64.",
                   rhs_nonzero=True, out=_to_float)
floordiv_op = binary("floordiv", _int_division(np.floor_divide), N,
                     "Floor division, rounding toward -inf.", rhs_nonzero=True)
floormod_op = binary("floormod", _int_division(np.mod), N,
                     "Remainder of floor division; takes the sign of y like Python's %.",
                     rhs_nonzero=True)
pow_op = binary("pow", _pow, S + C, "Elementwise x ** y.", lo=0.5, hi=2.0)
maximum_op = binary("maximum", np.maximum, N, "Elementwise max(x, y).")
minimum_op = binary("minimum", np.minimum, N, "Elementwise min(x, y).")
equal_op = binary("equal", np.equal, A, "Elementwise x == y.", out=dt.bool_, lo=-1, hi=1)
not_equal_op = binary("not_equal", np.not_equal, A, "Elementwise x != y.", out=dt.bool_, lo=-1,
                      hi=1)
less_op = binary("less", np.less, N, "Elementwise x < y.", out=dt.bool_)
less_equal_op = binary("less_equal", np.less_equal, N, "Elementwise x <= y.", out=dt.bool_)
greater_op = binary("greater", np.greater, N, "Elementwise x > y.", out=dt.bool_)
greater_equal_op = binary("greater_equal", np.greater_equal, N, "Elementwise x >= y.",
                          out=dt.bool_)
atan2_op = binary("atan2", np.arctan2, F,
                  "The angle of the point (x, y) in radians: atan2(y, x), with its quadrant.")
squared_difference_op = binary("squared_difference", lambda x, y: np.square(x - y), S,
                               "Elementwise (x - y) * (x - y).")
xlogy_op = binary("xlogy", lambda x, y: np.where(x == 0, np.zeros_like(x), x * np.log(
    np.where(x == 0, np.ones_like(y), y))), F, "x * log(y), and 0 where x is 0 (even for y 0).",
                  lo=0.2, hi=2.0)
truncatediv_op = binary("truncatediv", _int_division(
    lambda x, y: np.trunc(x / y).astype(x.dtype) if x.dtype.kind == "f"
    else (np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)).astype(x.dtype)), N,
    "Division rounding toward zero (C's integer division).", rhs_nonzero=True)
logical_and_op = binary("logical_and", np.logical_and, B, "Elementwise AND of bool tensors.")
logical_or_op = binary("logical_or", np.logical_or, B, "Elementwise OR of bool tensors.")
logical_xor_op = binary("logical_xor", np.logical_xor, B, "Elementwise XOR of bool tensors.")


def _cast_infer(types, dtype):
    return [TensorType(dtype, types[0].shape)]


def _cast_examples(rng, d):
    # Every target on the first shape; the other shapes (the loops' shape handling, the same
    # for every pair) take three targets in turn: each example is a conversion to compile.
    targets = list(dt.ALL)
    out = [Example((values(rng, d, UNARY_SHAPES[0], -3.0, 3.0),), {"dtype": to})
           for to in targets]
    for k, s in enumerate(UNARY_SHAPES[1:], 1):
        out += [Example((values(rng, d, s, -3.0, 3.0),),
                        {"dtype": targets[(3 * k + j) % len(targets)]}) for j in range(3)]
    return out


# Integer targets that a float reaches through int64 (truncate, then keep the low bits): what
# C's cast compiles to on x86, where TensorFlow's out-of-range casts are otherwise undefined.
THROUGH_INT64 = frozenset(d.np for d in (dt.int8, dt.int16, dt.uint8, dt.uint16, dt.uint32))
_TWO_63 = 2.0 ** 63


def _cast_kernel(x, dtype):
    x = np.asarray(x)
    if x.dtype.kind == "c" and not dtype.is_complex:
        # TensorFlow keeps the real part (a complex is true when either part is non-zero)
        x = x != 0 if dtype.is_bool else x.real
    if x.dtype.kind == "f" and dtype.is_integer:
        if dtype.np in THROUGH_INT64:
            return x.astype(np.int64).astype(dtype.np)
        if dtype is dt.uint64:  # [2**63, 2**64) directly, the rest through int64
            big = x >= _TWO_63
            return np.where(big, np.where(big, x, 0).astype(np.uint64),
                            np.where(big, 0, x).astype(np.int64).astype(np.uint64))
    return x.astype(dtype.np)


cast_op = OpDef(
    name="cast", kind=Kind.ELEMENTWISE, inputs=("x",), attrs=("dtype",), infer=_cast_infer,
    kernel=_cast_kernel, dtypes=A, unify=(0,), examples=_cast_examples,
    doc="Converts to another dtype like C's casts: floats truncate toward zero when cast to "
        "integers, integers wrap around (keep their low bits) when the target is narrower; "
        "a float outside an 8-, 16- or unsigned 32-bit target's range goes through int64 first "
        "(so -1.0 becomes 255 as uint8, as on x86).")


def _select_infer(types):
    check_dtype("select", "condition", types[0], B)
    check_unified("select", ("condition", "x", "y"), types, (1, 2), A)
    return [TensorType(types[1].dtype, broadcast_all("select", types))]


def _select_examples(rng, d):
    return [Example((values(rng, dt.bool_, c), values(rng, d, a), values(rng, d, b)))
            for c, a, b in [((), (), ()), ((4,), (4,), (4,)), ((3, 1), (3, 4), (4,))]]


select_op = OpDef(
    name="select", kind=Kind.ELEMENTWISE, inputs=("condition", "x", "y"), attrs=(),
    infer=_select_infer, kernel=np.where, dtypes=A, unify=(1, 2), examples=_select_examples,
    doc="Elementwise choice: x where condition is true, else y (all three broadcast).")
