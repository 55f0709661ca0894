"""Tensor shapes: ``TensorShape`` (TensorFlow's public class) and the tuple form the IR uses.

In the IR a shape is ``tuple[int | None, ...]`` (``None`` = unknown dimension) or ``None``
(unknown rank).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

Dims = Optional[tuple]  # tuple[int | None, ...] or None for unknown rank


def as_dims(shape: Any) -> Dims:
    """Normalizes a TensorShape, list, tuple or None into the IR's tuple form."""
    if shape is None:
        return None
    if type(shape) is tuple and all(type(d) is int for d in shape):
        return shape   # (the common case, a tensor's own shape: every tensor.shape makes one)
    if isinstance(shape, TensorShape):
        return shape.dims_tuple
    if isinstance(shape, int):
        return (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"A shape must be a list or tuple of ints, got {shape!r}.") from None
    dims = []
    for d in items:
        if d is None:
            dims.append(None)
            continue
        if hasattr(d, "numpy"):  # a scalar tensor
            d = d.numpy()
        try:
            dims.append(int(d))
        except (TypeError, ValueError):
            raise TypeError(f"A shape's dimensions must be ints or None, got {d!r} in "
                            f"{shape!r}.") from None
    return tuple(dims)


def format_dims(dims: Dims) -> str:
    """The IR spelling of a shape: ``[2,?]`` (unknown rank prints as ``[*]``)."""
    if dims is None:
        return "[*]"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def is_compatible(a: Dims, b: Dims) -> bool:
    """True when some concrete shape matches both (unknown dims and ranks match anything)."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def is_instance(shape: Dims, of: Dims) -> bool:
    """True when every tensor of shape ``shape`` also has shape ``of`` (``of`` is as general).

    >>> is_instance((5,), (None,)), is_instance((None,), (5,)), is_instance((5,), None)
    (True, False, True)
    """
    if of is None:
        return True
    if shape is None or len(shape) != len(of):
        return False
    return all(b is None or a == b for a, b in zip(shape, of))


def most_specific_common(a: Dims, b: Dims) -> Dims:
    """The most specific shape that both ``a`` and ``b`` are instances of."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


class TensorShape:
    """The static shape of a tensor, with unknown dimensions (``None``) or unknown rank.

    Compares equal to lists and tuples, indexes and iterates like one.

    >>> import stagecraft as tf
    >>> s = tf.TensorShape([2, None])
    >>> s.rank, s.as_list(), s == [2, None], s.is_fully_defined()
    (2, [2, None], True, False)
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Any):
        self._dims = as_dims(dims)

    @property
    def dims_tuple(self) -> Dims:
        return self._dims

    @property
    def rank(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self) -> Optional[list]:
        return None if self._dims is None else list(self._dims)

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        return is_compatible(self._dims, as_dims(other))

    def merge_with(self, other: Any) -> "TensorShape":
        o = as_dims(other)
        if not is_compatible(self._dims, o):
            raise ValueError(f"Shapes {self} and {TensorShape(o)} are not compatible.")
        if self._dims is None:
            return TensorShape(o)
        if o is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, o)])

    def concatenate(self, other: Any) -> "TensorShape":
        o = as_dims(other)
        if self._dims is None or o is None:
            return TensorShape(None)
        return TensorShape(self._dims + o)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key: Any):
        if self._dims is None:
            return None if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self) -> bool:
        return self._dims is not None

    def __eq__(self, other: Any) -> bool:
        try:
            return self._dims == as_dims(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims)

    def __add__(self, other: Any) -> "TensorShape":
        return self.concatenate(other)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("None" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    def __reduce__(self):
        return (TensorShape, (self.dims,))


def broadcast(a: Dims, b: Dims) -> Dims:
    """NumPy broadcasting of two shapes; raises ValueError when they are incompatible."""
    if a is None or b is None:
        return None
    out = []
    for x, y in zip(_pad(a, len(b)), _pad(b, len(a))):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ValueError(f"Incompatible shapes: {format_dims(a)} vs. {format_dims(b)}")
    return tuple(out)


def _pad(dims: Sequence, rank: int) -> tuple:
    return (1,) * (rank - len(dims)) + tuple(dims)
