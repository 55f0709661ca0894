"""The element types of stagecraft and TensorFlow's rules for inferring them."""
from __future__ import annotations

from typing import Any

import ml_dtypes  # bfloat16 as a NumPy dtype: TensorFlow's own choice for its NumPy arrays
import numpy as np


class DType:
    """An element type: ``bool``, the signed integers ``int8/16/32/64``, the unsigned
    ``uint8/16/32/64``, ``float16``/``bfloat16``/``float32``/``float64`` and
    ``complex64``/``complex128``.

    Compares equal to its name, its NumPy dtype and NumPy scalar type, like ``tf.DType``.

    >>> import stagecraft as tf
    >>> tf.float32.name, tf.float32.is_floating, tf.int32.max
    ('float32', True, 2147483647)
    >>> tf.bfloat16.is_floating, tf.bfloat16.size, float(tf.float16.max), tf.as_dtype("half")
    (True, 2, 65504.0, stagecraft.float16)
    """

    __slots__ = ("name", "short", "np", "is_floating", "is_integer", "is_bool", "is_complex",
                 "_hash")

    def __init__(self, name: str, short: str):
        self.name = name
        self.short = short  # the IR's spelling: f32, i64, bool
        self.np = np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)
        self.is_floating = self.np.kind == "f" or name == "bfloat16"  # ml_dtypes' kind is 'V'
        self.is_integer = self.np.kind in "iu"
        self.is_bool = self.np.kind == "b"
        self.is_complex = self.np.kind == "c"  # not floating, as in TensorFlow
        self._hash = hash(name)

    @property
    def as_numpy_dtype(self) -> type:
        return self.np.type

    @property
    def size(self) -> int:
        return self.np.itemsize

    @property
    def is_numpy_compatible(self) -> bool:
        return True

    @property
    def min(self):
        if self.is_bool:
            return False
        return ml_dtypes.finfo(self.np).min if self.is_floating else np.iinfo(self.np).min

    @property
    def max(self):
        if self.is_bool:
            return True
        return ml_dtypes.finfo(self.np).max if self.is_floating else np.iinfo(self.np).max

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        """The dtype of the real and imaginary parts of a complex dtype; itself otherwise.

        >>> complex64.real_dtype, float64.real_dtype
        (stagecraft.float32, stagecraft.float64)
        """
        return _REAL_PART.get(self.name, self)

    @property
    def is_unsigned(self) -> bool:
        return self.np.kind == "u"

    def is_compatible_with(self, other: Any) -> bool:
        return self == other

    def __eq__(self, other: Any) -> bool:
        if other is self:
            return True
        if isinstance(other, DType):
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return "stagecraft." + self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = DType("bool", "bool")
int8 = DType("int8", "i8")
int16 = DType("int16", "i16")
int32 = DType("int32", "i32")
int64 = DType("int64", "i64")
uint8 = DType("uint8", "u8")
uint16 = DType("uint16", "u16")
uint32 = DType("uint32", "u32")
uint64 = DType("uint64", "u64")
float16 = DType("float16", "f16")
bfloat16 = DType("bfloat16", "bf16")
float32 = DType("float32", "f32")
float64 = DType("float64", "f64")
complex64 = DType("complex64", "c64")
complex128 = DType("complex128", "c128")
_REAL_PART = {"complex64": float32, "complex128": float64}

# The dtype sets ops declare (``OpDef.dtypes``), after TensorFlow's kernel registrations:
INTS: tuple[DType, ...] = (int32, int64)  # index types (TF's Tidx): shapes, axes, indices
SIGNED_INTS: tuple[DType, ...] = (int8, int16, int32, int64)
UNSIGNED_INTS: tuple[DType, ...] = (uint8, uint16, uint32, uint64)
INTEGERS: tuple[DType, ...] = SIGNED_INTS + UNSIGNED_INTS
# float16/bfloat16: computed in float32 and rounded once per op (ir/ops/half.py), never
# promoted implicitly to or from float32
HALF: tuple[DType, ...] = (float16, bfloat16)
FLOATS: tuple[DType, ...] = HALF + (float32, float64)
NUMERIC: tuple[DType, ...] = INTEGERS + FLOATS  # real numbers: arithmetic, comparisons, sums
SIGNED: tuple[DType, ...] = SIGNED_INTS + FLOATS  # negative, abs, sign, pow: not unsigned in TF
COMPLEX: tuple[DType, ...] = (complex64, complex128)  # never promoted to or from implicitly
ALL: tuple[DType, ...] = (bool_,) + NUMERIC + COMPLEX
# The dtypes stagecraft started with: the generated op tests run these by default and sample
# the others (tests/support/op_examples.py; the whole matrix runs with --full-matrix).
CLASSIC: tuple[DType, ...] = (bool_, int32, int64, float32, float64)

_BY_NAME = {d.name: d for d in ALL} | {d.short: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}
_TF_ALIASES = {"float": float32, "double": float64, "int": int32, "long": int64,
               "complex": complex128, "half": float16}


def from_numpy(np_dtype: np.dtype) -> DType:
    """The DType of a NumPy dtype; raises TypeError for dtypes stagecraft does not have."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(
            f"stagecraft has no dtype for NumPy dtype '{np_dtype}'. Supported dtypes are "
            f"{', '.join(d.name for d in ALL)}; convert the array with .astype() first."
        ) from None


def as_dtype(value: Any) -> DType:
    """Converts a DType, a name (``'float32'``, ``'f32'``), a NumPy dtype or a Python type.

    >>> as_dtype('float64'), as_dtype(float), as_dtype(np.int32)
    (stagecraft.float64, stagecraft.float32, stagecraft.int32)
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value) or _TF_ALIASES.get(value)
        if found is None:
            raise TypeError(
                f"Cannot convert '{value}' to a stagecraft dtype. Use one of "
                f"{', '.join(d.name for d in ALL)}."
            )
        return found
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is float:
        return float32
    if value is complex:
        return complex128
    name = getattr(value, "name", None)  # objects like tf.DType from other libraries
    try:
        return from_numpy(np.dtype(value))
    except (TypeError, ValueError):
        if isinstance(name, str) and name in _BY_NAME:
            return _BY_NAME[name]
        raise TypeError(
            f"Cannot convert {value!r} to a stagecraft dtype. Use one of "
            f"{', '.join(d.name for d in ALL)}."
        ) from None


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def infer_python(value: Any) -> DType:
    """TensorFlow's dtype for a Python scalar: bool → bool, int → int32 (int64 when it does not
    fit), float → float32, complex → complex128.

    >>> infer_python(1 + 2j), infer_python(2.0)
    (stagecraft.complex128, stagecraft.float32)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, int):
        return int32 if _INT32_MIN <= value <= _INT32_MAX else int64
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex128
    if isinstance(value, np.generic):
        return from_numpy(value.dtype)
    raise TypeError(f"Cannot infer a dtype for {type(value).__name__} value {value!r}.")
