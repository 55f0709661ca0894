"""``TensorSpec``: the type of a tensor argument (shape with unknown dims, dtype, name)."""
from __future__ import annotations

from typing import Any

from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape, is_compatible


class TensorSpec:
    """Describes a tensor: ``TensorSpec(shape, dtype=float32, name=None)``.

    >>> import stagecraft as tf
    >>> spec = tf.TensorSpec([None, 3], tf.float32)
    >>> spec.is_compatible_with(tf.zeros([5, 3]))
    True
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape: Any, dtype: Any = _dt.float32, name: str | None = None):
        self._shape = TensorShape(shape)
        self._dtype = _dt.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> "TensorSpec":
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    def is_compatible_with(self, other: Any) -> bool:
        """True when ``other`` (a spec or tensor) has this dtype and a compatible shape."""
        return other.dtype == self._dtype and is_compatible(self._shape.dims_tuple,
                                                            TensorShape(other.shape).dims_tuple)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, TensorSpec) and self._shape == other._shape
                and self._dtype == other._dtype and self._name == other._name)

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype=stagecraft.{self._dtype.name}, " \
               f"name={self._name!r})"
