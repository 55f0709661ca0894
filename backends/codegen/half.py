"""Rounding to the half-precision formats in compiled code: ``round_to(x, *F16)`` and
``round_to(x, *BF16)`` (``round_f16``/``round_bf16`` in Python) give the float16 / bfloat16 value nearest to ``x`` (ties to even, subnormals
kept, overflow to infinity, NaN and infinities unchanged) as a float, so that compiled code can
hold half-precision tensors in float32 buffers and round each op's result as NumPy's float16
loops and ``ml_dtypes``' bfloat16 loops do (compute in float32, round once).

Written with :mod:`math` only (no bit casts, which neither Numba's CPU scalars nor CUDA device
code offer), like ``special.py``: the same source runs as plain Python (the CUDA simulator),
under ``numba.njit`` and as CUDA device functions. Scaling by a power of two is exact in
float64, so ``rne(a / quantum) * quantum`` rounds exactly.

>>> round_f16(1.0 + 2.0 ** -11), round_f16(1.0 + 3 * 2.0 ** -11), round_f16(65520.0)
(1.0, 1.001953125, inf)
>>> round_bf16(1.0 + 2.0 ** -8), round_bf16(-3.4e38)
(1.0, -inf)
"""
from __future__ import annotations

import math

from stagecraft.ir.ops.philox import HALF_QUANTUM

# (significant bits, smallest normal exponent, largest finite value) of each format
F16 = (11, -14, 65504.0)
BF16 = (8, -126, 3.3895313892515355e38)


def round_to(x, bits, emin, top):
    """``x`` rounded to the binary format with ``bits`` significant bits, smallest normal
    exponent ``emin`` (subnormals below it) and largest finite value ``top``, ties to even.
    Self-contained (CUDA device functions cannot call other Python functions): compiled code
    calls it as ``K.round_to(x, *F16)`` with the constants inlined.

    >>> round_to(0.1, *F16), round_to(2.5 * 2.0 ** -24, *F16), round_to(3.5 * 2.0 ** -24, *F16)
    (0.0999755859375, 1.1920928955078125e-07, 2.384185791015625e-07)
    """
    if x != x or x == 0.0 or math.isinf(x):
        return float(x)
    a = abs(float(x))
    e = math.frexp(a)[1]        # a = m * 2**e with 0.5 <= m < 1
    k = max(e, emin + 1) - bits  # the quantum is 2**k (fixed below the normal range)
    v = math.ldexp(a, -k)       # exact: a power-of-two scaling
    r = float(math.floor(v))
    d = v - r
    if d > 0.5 or (d == 0.5 and r - 2.0 * math.floor(0.5 * r) == 1.0):  # ties to even
        r += 1.0
    v = math.ldexp(r, k)
    if v > top:
        v = math.inf
    return v if x > 0.0 else -v


def round_f16(x):
    """The float16 value nearest to ``x`` (as a float)."""
    return round_to(x, *F16)


def round_bf16(x):
    """The bfloat16 value nearest to ``x`` (as a float)."""
    return round_to(x, *BF16)


# ---------------------------------------------------------------- code generation

# The formats by dtype name (the quantum of each one's uniform draws: ir/ops/philox.py)
FORMATS = {"float16": F16, "bfloat16": BF16}
QUANTUM = HALF_QUANTUM
# Ops whose results are input elements moved (or zeros): the only non-elementwise ops whose
# half results compiled code need not round (sum_like, gather_grad and scatter_nd add up).
MOVES = frozenset(("reshape", "reshape_like", "reshape_dynamic", "broadcast_to",
                   "broadcast_to_dynamic", "broadcast_like", "tile", "tile_dynamic", "transpose",
                   "concat", "gather", "row_update", "one_hot", "squeeze", "expand_dims",
                   "strided_slice", "strided_slice_grad", "strided_slice_update"))


def is_half(d) -> bool:
    """Whether DType ``d`` is float16 or bfloat16 (held in float32 in compiled code).

    >>> from stagecraft.ir import dtypes as dt
    >>> is_half(dt.bfloat16), is_half(dt.float32)
    (True, False)
    """
    return d.name in FORMATS


def storage_name(d) -> str:
    """The NumPy dtype name of DType ``d`` in compiled code: ``float32`` for the half formats.

    >>> from stagecraft.ir import dtypes as dt
    >>> storage_name(dt.float16), storage_name(dt.int8)
    ('float32', 'int8')
    """
    return "float32" if d.name in FORMATS else d.np.name


def round_expr(expr: str, d) -> str:
    """Source rounding the float expression ``expr`` to half dtype ``d`` as a float32 scalar
    (through float32 first, as TensorFlow's casts from float64 and integers go); generated
    code calls the kernel library's compiled ``round_to`` as ``K.round_to``.

    >>> from stagecraft.ir import dtypes as dt
    >>> round_expr("x", dt.float16)
    'np.float32(K.round_to(np.float32(x), 11, -14, 65504.0))'
    """
    bits, emin, top = FORMATS[d.name]
    return f"np.float32(K.round_to(np.float32({expr}), {bits}, {emin}, {top!r}))"


def round_array_expr(expr: str, d) -> str:
    """Source of a new float32 array: the float32 array ``expr`` rounded to half dtype ``d``.

    >>> from stagecraft.ir import dtypes as dt
    >>> round_array_expr("a", dt.bfloat16)
    'K.round_array(a, 8, -126, 3.3895313892515355e+38)'
    """
    bits, emin, top = FORMATS[d.name]
    return f"K.round_array({expr}, {bits}, {emin}, {top!r})"


def literal_value(value, d) -> float:
    """Python number ``value`` as the half dtype ``d`` converts it (NumPy's / ml_dtypes'
    conversion, what eager code gets), as a float.

    >>> from stagecraft.ir import dtypes as dt
    >>> literal_value(0.1, dt.float16), literal_value(0.1, dt.bfloat16)
    (0.0999755859375, 0.10009765625)
    """
    return float(d.np.type(value))


# ---------------------------------------------------------------- 16-bit encodings

# (fraction bits, exponent bias, all-ones exponent) of each format's 16-bit pattern: device
# code (CUDA kernels, which have no float16/bfloat16 arrays of their own) converts between a
# half tensor's bits and float32 with these.
F16_BITS = (10, 15, 31)
BF16_BITS = (7, 127, 255)
ENCODINGS = {"float16": F16_BITS, "bfloat16": BF16_BITS}


def from_bits(b, fbits, bias, emax):
    """The value of the 16-bit pattern ``b`` of the format (``F16_BITS`` / ``BF16_BITS``).

    >>> from_bits(0x3C00, *F16_BITS), from_bits(0x0001, *F16_BITS), from_bits(0xC2C0, *BF16_BITS)
    (1.0, 5.960464477539063e-08, -96.0)
    """
    b = int(b)
    e = (b >> fbits) & emax
    m = b & ((1 << fbits) - 1)
    if e == 0:
        v = math.ldexp(float(m), 1 - bias - fbits)
    elif e == emax:
        v = math.inf if m == 0 else math.nan
    else:
        v = math.ldexp(float(m + (1 << fbits)), e - bias - fbits)
    return -v if b >> 15 else v


def to_bits(v, fbits, bias, emax):
    """The 16-bit pattern of ``v``, a value of the format (``round_to`` gives one); NaNs
    become the quiet NaN of their sign.

    >>> to_bits(1.0, *F16_BITS), to_bits(-0.0, *F16_BITS), to_bits(-96.0, *BF16_BITS)
    (15360, 32768, 49856)
    """
    sign = 32768 if math.copysign(1.0, v) < 0.0 else 0
    a = abs(float(v))
    if a != a:
        return sign | (emax << fbits) | (1 << (fbits - 1))
    if math.isinf(a):
        return sign | (emax << fbits)
    if a == 0.0:
        return sign
    m, e = math.frexp(a)   # a = m * 2**e, 0.5 <= m < 1
    biased = e - 1 + bias
    if biased <= 0:        # subnormal: a multiple of the smallest one
        return sign | int(math.ldexp(a, bias - 1 + fbits))
    return sign | (biased << fbits) | int(math.ldexp(2.0 * m - 1.0, fbits))
