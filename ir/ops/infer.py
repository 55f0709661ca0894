"""Inference helpers shared by the op families: dtype checks, broadcasting, axis handling."""
from __future__ import annotations

from typing import Sequence

from stagecraft.ir.dtypes import DType
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.shapes import Dims, broadcast, format_dims
from stagecraft.ir.types import TensorType


def fail(op: str, message: str) -> InvalidArgumentError:
    """The error every inference rule raises: '<op>: <what is wrong>. <how to fix>'."""
    return InvalidArgumentError(f"{op}: {message}")


def check_unified(op: str, names: Sequence[str], types: Sequence[TensorType],
                  unify: Sequence[int], allowed: Sequence[DType]) -> DType:
    """Checks that the inputs in ``unify`` share one allowed dtype and returns it."""
    first = types[unify[0]].dtype
    for i in unify[1:]:
        if types[i].dtype is not first:
            a, b = _name(names, unify[0]), _name(names, i)
            raise fail(op, f"'{a}' is {first.name} but '{b}' is {types[i].dtype.name}; the "
                           f"inputs must have the same dtype (stagecraft, like TensorFlow, never "
                           f"promotes between tensors). Cast one of them, e.g. "
                           f"tf.cast({b}, tf.{first.name}).")
    if first not in allowed:
        raise fail(op, f"'{_name(names, unify[0])}' has dtype {first.name}, which {op} does not "
                       f"support; supported: {', '.join(d.name for d in allowed)}. Cast it "
                       f"with tf.cast first.")
    return first


def check_dtype(op: str, name: str, t: TensorType, allowed: Sequence[DType]) -> DType:
    if t.dtype not in allowed:
        raise fail(op, f"'{name}' has dtype {t.dtype.name}, which {op} does not support; "
                       f"supported: {', '.join(d.name for d in allowed)}.")
    return t.dtype


def _name(names: Sequence[str], i: int) -> str:
    return names[i] if i < len(names) else f"{names[-1]}[{i - len(names) + 1}]"


def broadcast_all(op: str, types: Sequence[TensorType]) -> Dims:
    shape: Dims = ()
    for t in types:
        try:
            shape = broadcast(shape, t.shape)
        except ValueError:
            shapes = ", ".join(format_dims(u.shape) for u in types)
            raise fail(op, f"Incompatible shapes for broadcasting: {shapes}. Each dimension "
                           f"must be equal or 1 (NumPy broadcasting rules).") from None
    return shape


def normalize_axis(op: str, axis: int, rank: int | None, extra: int = 0) -> int:
    """Maps a possibly negative axis into [0, rank + extra); raises when out of range. With an
    unknown rank the axis is kept as given (the kernel resolves it when the rank is known)."""
    if rank is None:
        return axis
    n = rank + extra
    if not -n <= axis < n:
        raise fail(op, f"axis {axis} is out of range for a tensor of rank {rank}; "
                       f"expected an axis in [{-n}, {n}).")
    return axis % n


def normalize_axes(op: str, axes, rank: int | None) -> tuple[int, ...] | None:
    """Reduction axes: None means all; duplicates are rejected like TensorFlow does."""
    if axes is None:
        return None if rank is None else tuple(range(rank))
    out = tuple(normalize_axis(op, a, rank) for a in axes)
    if len(set(out)) != len(out):
        raise fail(op, f"duplicate axes in {tuple(axes)}.")
    return tuple(sorted(out))


def num_elements(dims: Dims) -> int | None:
    if dims is None or any(d is None for d in dims):
        return None
    n = 1
    for d in dims:
        n *= d
    return n
