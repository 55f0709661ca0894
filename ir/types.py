"""``TensorType``: the static type (dtype + shape) of a value, used by inference and the IR."""
from __future__ import annotations

from dataclasses import dataclass

from stagecraft.ir.dtypes import DType
from stagecraft.ir.shapes import Dims, format_dims


@dataclass(frozen=True, slots=True)
class TensorType:
    """A dtype and a shape whose dims may be ``None`` (unknown); ``shape=None`` is unknown rank.

    >>> from stagecraft.ir import dtypes
    >>> str(TensorType(dtypes.float32, (2, None)))
    'f32[2,?]'
    """

    dtype: DType
    shape: Dims

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def __str__(self) -> str:
        return self.dtype.short + format_dims(self.shape)
