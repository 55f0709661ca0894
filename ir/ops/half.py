"""float16 and bfloat16 in the NumPy kernels: compute in float32, round once per op.

TensorFlow's CPU kernels for the half-precision dtypes widen each operand to float32, compute,
and round the result to the half format once (ties to even, overflow to infinity); NumPy's
float16 loops and ``ml_dtypes``' bfloat16 loops do the same for the elementwise functions they
have, and TensorFlow's reductions, matrix products and convolutions accumulate in float32 too.
Rather than teach every NumPy kernel both formats (``ml_dtypes`` lacks many functions, and a
bfloat16 array's dtype kind is ``'V'``, not ``'f'``), ``half_kernel`` wraps an op's kernel:
half inputs are widened to float32 (exactly), half dtype attributes become float32, and each
output the op's inference gives a half dtype is rounded back. The compiled backends follow the
same rule (``backends/codegen/half.py``), so eager, staged and compiled results agree bit for
bit wherever the float32 computation does.

>>> import numpy as np
>>> from stagecraft.ir import OPS
>>> x = np.array([1.0, 2.0 ** -10], np.float16)
>>> OPS["add"].kernel(x, x).dtype, OPS["reduce_sum"].kernel(x, axes=None, keepdims=False)
(dtype('float16'), np.float16(1.001))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.types import TensorType

HALF_NP = frozenset(d.np for d in dt.HALF)
_F16, _BF16 = dt.float16.np, dt.bfloat16.np
_F32 = np.dtype(np.float32)


def is_half(value: Any) -> bool:
    """Whether ``value`` is an array or NumPy scalar of a half-precision dtype.

    >>> is_half(np.float16(1)), is_half(np.float32(1)), is_half(2.0)
    (True, False, False)
    """
    return getattr(value, "dtype", None) in HALF_NP


def widen(value: Any) -> Any:
    """A half-precision array or scalar as float32 (exact); anything else unchanged.

    >>> widen(np.array([0.1], np.float16)).dtype, widen(3)
    (dtype('float32'), 3)
    """
    if getattr(value, "dtype", None) in HALF_NP:
        return np.asarray(value).astype(_F32)
    return value


def narrow(value: Any, d: dt.DType) -> np.ndarray:
    """``value`` rounded to dtype ``d`` when ``d`` is a half dtype (ties to even, overflow to
    infinity; a float64 value goes through float32 first, as TensorFlow's casts do).

    >>> narrow(np.float32(65520.0), dt.float16), narrow(np.float64(1.0), dt.int32)
    (np.float16(inf), np.float64(1.0))
    """
    if d not in dt.HALF:
        return value
    array = np.asarray(value)
    if array.dtype != d.np:
        with np.errstate(over="ignore"):  # overflow to infinity is silent, as in TensorFlow
            if array.dtype.kind == "f" and array.dtype != _F32:
                array = array.astype(_F32)
            array = array.astype(d.np)
    return array if isinstance(value, np.ndarray) else array[()]  # scalars stay scalars


def _widen_attr(value: Any) -> Any:
    return dt.float32 if value is dt.float16 or value is dt.bfloat16 else value


def half_kernel(kernel: Callable[..., Any], infer: Callable[..., Any],
                num_outputs: int) -> Callable[..., Any]:
    """``kernel`` taking and giving float16/bfloat16 arrays (see the module docstring); calls
    without half inputs or a half ``dtype`` attribute go straight to ``kernel``.

    >>> k = half_kernel(np.multiply, lambda types: [types[0]], 1)
    >>> k(np.array([3.0], np.float16), np.array([0.1], np.float16))
    array([0.2998], dtype=float16)
    """
    def run(*values: Any, **attrs: Any) -> Any:
        # (the hot path of every eager op: dtype identity first, as NumPy's dtypes are mostly
        # singletons; unpickled arrays have equal copies)
        for v in values:
            d = getattr(v, "dtype", None)
            if d is _F16 or d is _BF16 or d is not None and d.itemsize == 2 and d in HALF_NP:
                break
        else:
            target = attrs.get("dtype")
            if target is not dt.float16 and target is not dt.bfloat16:
                return kernel(*values, **attrs)
        types = [TensorType(dt.from_numpy(np.asarray(v).dtype), np.shape(v)) for v in values]
        outs = [t.dtype for t in infer(types, **attrs)]
        result = kernel(*[widen(v) for v in values],
                        **{k: _widen_attr(a) for k, a in attrs.items()})
        if num_outputs == 1:
            return narrow(result, outs[0])
        return tuple(narrow(r, d) for r, d in zip(result, outs))

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    run.__doc__ = kernel.__doc__
    return run
