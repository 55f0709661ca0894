"""Scalar expressions of the elementwise ops: the body of a fused loop is a chain of these.

``SCALAR[op](args, in_dtype) -> source`` gives the value of one element from the elements (or
scalars) ``args``; the code generator casts it to the output dtype (``np.float32(...)``),
because Numba widens integer arithmetic to int64 and would otherwise change TensorFlow's
dtypes.  ``CHECKS[op]`` lists run-time conditions that must raise before the value is
computed (TensorFlow raises on integer division by zero; NumPy would give 0 with a warning).
"""
from __future__ import annotations

from typing import Callable

from stagecraft.backends.codegen import half
from stagecraft.backends.codegen.source import literal, np_type
from stagecraft.ir import dtypes as dt
from stagecraft.ir.dtypes import DType
from stagecraft.ir.ops.elementwise import THROUGH_INT64

Expr = Callable[[list, DType], str]


def _call(fn: str) -> Expr:
    return lambda a, d: f"{fn}({', '.join(a)})"


def _infix(op: str) -> Expr:
    return lambda a, d: f"({a[0]} {op} {a[1]})"


def _const(v: int) -> Expr:
    return lambda a, d: literal(v, d)


def _divide(a: list, d: DType) -> str:
    if d.is_floating or d.is_complex:
        return f"({a[0]} / {a[1]})"
    return f"(np.float64({a[0]}) / np.float64({a[1]}))"   # integers divide to float64


def _floordiv(a: list, d: DType) -> str:
    return f"np.floor_divide({a[0]}, {a[1]})" if d.is_floating else f"({a[0]} // {a[1]})"


def _floormod(a: list, d: DType) -> str:
    return f"np.mod({a[0]}, {a[1]})" if d.is_floating else f"({a[0]} % {a[1]})"


def _truncatediv(a: list, d: DType) -> str:
    if d.is_floating:
        return f"np.trunc({a[0]} / {a[1]})"
    if d.is_unsigned:  # (the sign test below would mix in int64: uint64 * int64 is float64)
        return f"({a[0]} // {a[1]})"
    # rounds toward zero whatever the signs (Python's // rounds toward -inf)
    return (f"((abs({a[0]}) // abs({a[1]})) * (1 if ({a[0]} < 0) == ({a[1]} < 0) else -1))")


def _pow(a: list, d: DType) -> str:
    return f"np.power({a[0]}, {a[1]})" if d.is_floating else f"({a[0]} ** {a[1]})"


def _round(a: list, d: DType) -> str:
    return f"np.rint({a[0]})" if d.is_floating else a[0]   # rint: half to even, like TF


def _same(a: list, d: DType) -> str:
    return a[0]   # identity; for cast, the generator's cast to the output dtype converts


def _shift(op: str) -> Expr:
    def expr(a: list, d: DType) -> str:
        # TensorFlow clamps the amount to [0, bits - 1]; literals of d's type keep Numba from
        # mixing signed and unsigned 64-bit integers (which it would widen to float64).
        amount = f"min(max({a[1]}, {literal(0, d)}), {literal(d.size * 8 - 1, d)})"
        return f"({a[0]} {op} {amount})"
    return expr


def _math(fn: str) -> Expr:
    """``np.<fn>`` for real arguments, ``cmath.<fn>`` for complex ones (CUDA device code has
    the math functions of both modules, not NumPy's ufuncs)."""
    return lambda a, d: f"{'cmath.' + fn if d.is_complex else 'np.' + fn}({', '.join(a)})"


SCALAR: dict[str, Expr] = {
    "negative": lambda a, d: f"(-{a[0]})",
    "abs": lambda a, d: f"abs({a[0]})" if d.is_complex else f"np.abs({a[0]})",
    "sign": _call("np.sign"),
    "square": lambda a, d: f"({a[0]} * {a[0]})",
    "exp": _math("exp"),
    "log": _math("log"),
    "log1p": _call("np.log1p"),
    "sqrt": _math("sqrt"),
    "rsqrt": lambda a, d: f"({literal(1, d)} / np.sqrt({a[0]}))",
    "sin": _math("sin"),
    "cos": _math("cos"),
    "tanh": _math("tanh"),
    "sigmoid": lambda a, d: f"np.exp(-np.logaddexp({literal(0, d)}, -{a[0]}))",
    "softplus": lambda a, d: f"np.logaddexp({literal(0, d)}, {a[0]})",
    "relu": lambda a, d: f"np.maximum({a[0]}, {literal(0, d)})",
    "floor": _call("np.floor"),
    "ceil": _call("np.ceil"),
    "round": _round,
    "logical_not": lambda a, d: f"(not {a[0]})",
    "identity": _same,
    "stop_gradient": _same,
    "zeros_like": _const(0),
    "ones_like": _const(1),
    "expm1": _call("np.expm1"),
    "tan": _math("tan"),
    "atan": _call("np.arctan"),
    "asin": _call("np.arcsin"),
    "acos": _call("np.arccos"),
    "sinh": _math("sinh"),
    "cosh": _math("cosh"),
    "asinh": _call("np.arcsinh"),
    "acosh": _call("np.arccosh"),
    "atanh": _call("np.arctanh"),
    "reciprocal": lambda a, d: f"({literal(1, d)} / {a[0]})",
    "softsign": lambda a, d: f"({a[0]} / ({literal(1, d)} + np.abs({a[0]})))",
    "is_finite": _call("np.isfinite"),
    "is_nan": _call("np.isnan"),
    "is_inf": _call("np.isinf"),
    "atan2": _call("np.arctan2"),
    "squared_difference": lambda a, d: f"(({a[0]} - {a[1]}) * ({a[0]} - {a[1]}))",
    "xlogy": lambda a, d: f"({literal(0, d)} if {a[0]} == 0 else {a[0]} * np.log({a[1]}))",
    "truncatediv": _truncatediv,
    "add": _infix("+"),
    "subtract": _infix("-"),
    "multiply": _infix("*"),
    "divide": _divide,
    "floordiv": _floordiv,
    "floormod": _floormod,
    "pow": _pow,
    "maximum": _call("np.maximum"),
    "minimum": _call("np.minimum"),
    "equal": _infix("=="),
    "not_equal": _infix("!="),
    "less": _infix("<"),
    "less_equal": _infix("<="),
    "greater": _infix(">"),
    "greater_equal": _infix(">="),
    "logical_and": _infix("&"),
    "logical_or": _infix("|"),
    "logical_xor": _infix("!="),
    "cast": _same,
    "select": lambda a, d: f"({a[1]} if {a[0]} else {a[2]})",
    "complex": lambda a, d: f"complex({a[0]}, {a[1]})",
    "real": lambda a, d: f"{a[0]}.real",
    "imag": lambda a, d: f"{a[0]}.imag",
    "conj": lambda a, d: f"{a[0]}.conjugate()",
    "angle": lambda a, d: f"np.arctan2({a[0]}.imag, {a[0]}.real)",
    "bitwise_and": _infix("&"),
    "bitwise_or": _infix("|"),
    "bitwise_xor": _infix("^"),
    "invert": lambda a, d: f"(~{a[0]})",
    "left_shift": _shift("<<"),
    "right_shift": _shift(">>"),
}

# The special functions (backends/codegen/special.py), called through the generated code's
# kernel module ``K`` (Numba's njit copies on the CPU, device functions on a GPU).
SCALAR.update({op: _call(f"K.{op}") for op in ("lgamma", "digamma", "erf", "erfc", "erfinv",
                                                 "zeta", "random_gamma_grad")})

# op -> (condition on the element sources, message) for integer inputs only.
_INT_CHECKS: dict[str, tuple[Callable[[list], str], str]] = {
    "floordiv": (lambda a: f"{a[1]} == 0", "Integer division by zero."),
    "floormod": (lambda a: f"{a[1]} == 0", "Integer division by zero."),
    "truncatediv": (lambda a: f"{a[1]} == 0", "Integer division by zero."),
    "pow": (lambda a: f"{a[1]} < 0", "Integers to negative integer powers are not allowed."),
}


def check(op: str, args: list, d: DType) -> tuple[str, str] | None:
    """``(condition, message)`` that must raise before computing ``op`` on ``args``."""
    if op in _INT_CHECKS and d.is_integer:
        cond, message = _INT_CHECKS[op]
        return cond(args), message
    return None


def convert(expr: str, src: DType, dst: DType) -> str:
    """``expr`` (of dtype ``src``, or wider after Numba's promotion) as a ``dst`` scalar; a
    float becomes a small or unsigned integer as the ``cast`` kernel says (through int64, and
    for uint64 directly from 2**63 up), never by LLVM's undefined out-of-range conversion.

    >>> convert("x", dt.float32, dt.uint8)
    'np.uint8(np.int64(x))'
    """
    if dst == dt.bool_:
        return expr if src == dt.bool_ else f"({expr} != 0)"
    if src.is_complex and not dst.is_complex:
        # casts keep the real part, as TensorFlow's; (abs, real, imag and angle give a real
        # value already, whose .real is itself)
        return convert(f"({expr}).real", src.real_dtype, dst)
    if half.is_half(dst):  # rounded to the format once per op (``half``)
        return half.round_expr(expr, dst)
    if src.is_floating and dst.is_integer:
        if dst.np in THROUGH_INT64:
            return f"{np_type(dst)}(np.int64({expr}))"
        if dst == dt.uint64:
            return (f"(np.uint64({expr}) if {expr} >= 9223372036854775808.0 else "
                    f"np.uint64(np.int64({expr})))")
    return f"{np_type(dst)}({expr})"
