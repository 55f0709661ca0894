"""The NumPy names that the elementwise scalar expressions (``codegen.scalar_ops``) use, as
CUDA device code.

The CPU expressions call ``np.exp``, ``np.rint``, ``np.logaddexp``...; numba-cuda lowers only
part of NumPy's ufuncs inside kernels, so on a GPU the generated kernels see this module as
``np``: the same names bound to ``math`` functions (which CUDA types float32 -> float32) and to
small device functions written here with NumPy's semantics. Under the simulator kernels run as
Python and use NumPy itself, whose scalar ufuncs are the specification these functions follow.
"""
from __future__ import annotations

import functools
import math
import types

import numpy as np

from stagecraft.backends.numba_cuda.launch import cuda_module

_LOG2 = math.log(2.0)


def _rint(x):
    # Round half to even, as np.rint and TensorFlow's round.
    r = math.floor(x)
    diff = x - r
    if diff > 0.5 or (diff == 0.5 and math.fmod(r, 2.0) != 0.0):
        r += 1.0
    return r


def _sign(x):
    if x > 0:
        return x - x + 1   # keeps x's type; NaN falls through to x - x = NaN
    if x < 0:
        return x - x - 1
    return x - x


def _logaddexp(x, y):
    # NumPy's npy_logaddexp: exact for equal arguments (also +-inf), stable otherwise.
    if x == y:
        return x + _LOG2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d   # NaN


def _mod(a, b):
    # NumPy's npy_divmod (remainder half): the result takes the sign of the divisor.
    if b == 0:
        return math.fmod(a, b)
    m = math.fmod(a, b)
    if m != 0:
        if (b < 0) != (m < 0):
            m += b
    else:
        m = math.copysign(0.0, b)
    return m


def _floor_divide(a, b):
    # NumPy's npy_divmod (quotient half): floor of the exact quotient, not of a / b rounded.
    if b == 0:
        return a / b
    m = math.fmod(a, b)
    div = (a - m) / b
    if m != 0 and (b < 0) != (m < 0):
        div -= 1.0
    if div != 0:
        q = math.floor(div)
        if div - q > 0.5:
            q += 1.0
        return q
    return math.copysign(0.0, a / b)


def _maximum(a, b):
    # NaN-propagating like np.maximum.
    if a != a or a > b:
        return a
    return b


def _minimum(a, b):
    if a != a or a < b:
        return a
    return b


def _trunc(x):
    # (math.trunc needs __trunc__, which NumPy scalars lack on the simulator)
    return math.floor(x) if x >= 0 else math.ceil(x)


# name -> plain Python implementation; each becomes a device function on the GPU.
DEVICE_FUNCTIONS = {"rint": _rint, "sign": _sign, "logaddexp": _logaddexp, "mod": _mod,
                    "floor_divide": _floor_divide, "maximum": _maximum, "minimum": _minimum,
                    "trunc": _trunc}
MATH = {"exp": math.exp, "log": math.log, "log1p": math.log1p, "sqrt": math.sqrt,
        "sin": math.sin, "cos": math.cos, "tanh": math.tanh, "floor": math.floor,
        "ceil": math.ceil, "power": math.pow, "abs": abs, "expm1": math.expm1,
        "tan": math.tan, "arctan": math.atan, "arcsin": math.asin, "arccos": math.acos,
        "sinh": math.sinh, "cosh": math.cosh, "arcsinh": math.asinh, "arccosh": math.acosh,
        "arctanh": math.atanh, "isfinite": math.isfinite, "isnan": math.isnan,
        "isinf": math.isinf, "arctan2": math.atan2}
# Every dtype's scalar type (the generated code writes casts as `np.int8(x)`, ...).
CONSTANTS = {"nan": np.nan, "inf": np.inf, "bool_": np.bool_,
             **{name: getattr(np, name) for name in (
                 "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "complex64", "complex128")}}


@functools.lru_cache(maxsize=None)
def module() -> types.ModuleType:
    """The ``np`` that generated kernels see on a GPU (a module, so Numba resolves its
    attributes at compile time like NumPy's).

    >>> module().exp is math.exp, module().float32 is np.float32
    (True, True)
    """
    m = types.ModuleType("stagecraft_cuda_np")
    for name, fn in DEVICE_FUNCTIONS.items():
        setattr(m, name, cuda_module().jit(device=True)(fn))
    for table in (MATH, CONSTANTS):
        for name, value in table.items():
            setattr(m, name, value)
    return m
