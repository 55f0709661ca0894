"""Array op wrappers: creation, reshaping, joining, gathering, slicing (``stagecraft.*``)."""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from stagecraft.bind import bind
from stagecraft.convert import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.shapes import TensorShape, as_dims
from stagecraft.tensor import Tensor

_O = dict(OPS)


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _static_dims(shape: Any, what: str) -> tuple[int, ...]:
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    dims = as_dims(shape)
    if dims is None or None in dims:
        raise ValueError(f"{what}: the shape must be fully known, got {shape!r}.")
    return dims


# --------------------------------------------------------------------------- creation

def zeros(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros.

    >>> import stagecraft as tf
    >>> tf.zeros([2], tf.int32).numpy().tolist()
    [0, 0]
    """
    d = _dt.as_dtype(dtype)
    return fill(_static_dims(shape, "zeros"), np.zeros((), d.np))


def ones(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """A tensor of ones."""
    d = _dt.as_dtype(dtype)
    return fill(_static_dims(shape, "ones"), np.ones((), d.np))


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value`` (whose dtype it takes)."""
    return bind(_O["fill"], value, dims=_static_dims(dims, "fill"))


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Zeros with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    out = bind(_O["zeros_like"], input)
    return out if dtype is None else _cast(out, dtype)


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Ones with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    out = bind(_O["ones_like"], input)
    return out if dtype is None else _cast(out, dtype)


def _cast(x: Tensor, dtype: Any) -> Tensor:
    from stagecraft.math_ops import cast
    return cast(x, dtype)


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001
          name: str = "range") -> Tensor:
    """start, start + delta, ... up to (not including) limit; ``range(n)`` counts from 0.

    The dtype is int32 unless an argument is a float (then float32) or ``dtype`` is given.

    >>> import stagecraft as tf
    >>> tf.range(1, 8, 3).numpy().tolist()
    [1, 4, 7]
    """
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    if dtype is None:
        ts = [convert_to_tensor(a) for a in args]
        kinds = [t.dtype for t in ts]
        d = next((k for k in (_dt.float64, _dt.float32, _dt.int64) if k in kinds), _dt.int32)
    else:
        d = _dt.as_dtype(dtype)
    from stagecraft.math_ops import cast
    return bind(_O["range"], *[cast(a, d) for a in args])


def eye(num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
        dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """The identity matrix; ``batch_shape`` adds leading dimensions."""
    out = bind(_O["eye"], num_rows=int(num_rows),
               num_columns=int(num_rows if num_columns is None else num_columns),
               dtype=_dt.as_dtype(dtype))
    if batch_shape is not None:
        b = _static_dims(batch_shape, "eye")
        out = broadcast_to(out, b + tuple(out.shape.as_list()))
    return out


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Returns the input unchanged (a tensor)."""
    return bind(_O["identity"], input)


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The input, treated as a constant by gradient tapes.

    >>> import stagecraft as tf
    >>> x = tf.constant(3.)
    >>> with tf.GradientTape() as t:
    ...     t.watch(x)
    ...     y = x * tf.stop_gradient(x)
    >>> float(t.gradient(y, x))
    3.0
    """
    return bind(_O["stop_gradient"], input)


# ---------------------------------------------------------------------------- shapes

def shape(input: Any, out_type: Any = _dt.int32, name: str | None = None) -> Tensor:  # noqa: A002
    """The shape of ``input`` as a 1-D int32 tensor."""
    return bind(_O["shape"], input, out_type=_dt.as_dtype(out_type))


def size(input: Any, out_type: Any = _dt.int32, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of elements of ``input`` as a scalar tensor."""
    from stagecraft.math_ops import reduce_prod
    return reduce_prod(shape(input, out_type))


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input`` as a scalar int32 tensor."""
    return convert_to_tensor(np.array(_t(input).ndim, np.int32))


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """The same values in a new shape; one dimension may be -1.

    >>> import stagecraft as tf
    >>> tf.reshape(tf.range(6), [2, -1]).shape
    TensorShape([2, 3])
    """
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if np.ndim(shape) == 0:
        shape = [shape]
    return bind(_O["reshape"], tensor, shape=tuple(int(d) for d in shape))


def transpose(a: Any, perm: Sequence[int] | None = None, conjugate: bool = False,
              name: str = "transpose") -> Tensor:
    """Permutes dimensions (reverses them by default)."""
    a = _t(a)
    if perm is None:
        perm = tuple(builtins.range(a.ndim - 1, -1, -1))
    elif isinstance(perm, Tensor):
        perm = perm.numpy().tolist()
    return bind(_O["transpose"], a, perm=tuple(int(p) for p in perm))


def concat(values: Sequence[Any], axis: int, name: str = "concat") -> Tensor:
    """Joins tensors along an existing axis.

    >>> import stagecraft as tf
    >>> tf.concat([[1, 2], [3]], 0).numpy().tolist()
    [1, 2, 3]
    """
    values = list(values)
    if not values:
        raise ValueError("concat: values must be a non-empty list of tensors.")
    if len(values) == 1:
        return identity(values[0])
    return bind(_O["concat"], *values, axis=int(axis))


def stack(values: Sequence[Any], axis: int = 0, name: str = "stack") -> Tensor:
    """Joins same-shape tensors along a new axis.

    >>> import stagecraft as tf
    >>> tf.stack([[1, 2], [3, 4]], axis=1).numpy().tolist()
    [[1, 3], [2, 4]]
    """
    values = [_t(v) for v in values]
    if not values:
        raise ValueError("stack: values must be a non-empty list of tensors.")
    shapes = {tuple(v.shape.as_list()) for v in values}
    if len(shapes) > 1:
        raise InvalidArgumentError(f"stack: all inputs must have the same shape, got "
                                   f"{sorted(shapes)}.")
    return concat([expand_dims(v, axis) for v in values], axis)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list:
    """Splits a tensor into a list of tensors along ``axis``."""
    value = _t(value)
    if value.ndim == 0:
        raise ValueError("unstack: cannot unstack a scalar tensor.")
    axis = axis % value.ndim if -value.ndim <= axis < value.ndim else None
    if axis is None:
        raise ValueError(f"unstack: axis out of range for a tensor of rank {value.ndim}.")
    n = value.shape[axis]
    if num is not None and num != n:
        raise ValueError(f"unstack: num={num} but dimension {axis} has size {n}.")
    lead = (("slice", None, None, None),) * axis
    return [bind(_O["strided_slice"], value, spec=lead + (("index", i),))
            for i in builtins.range(n)]


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:  # noqa: A002
    """Inserts a dimension of size 1 at ``axis``."""
    return bind(_O["expand_dims"], input, axis=int(axis))


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Removes dimensions of size 1 (all, or those listed in ``axis``)."""
    if axis is not None and not isinstance(axis, (list, tuple)):
        axis = (axis,)
    return bind(_O["squeeze"], input, axis=None if axis is None else tuple(int(a) for a in axis))


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Repeats the input ``multiples[i]`` times along dimension i."""
    return bind(_O["tile"], input, multiples=_static_dims(multiples, "tile"))


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Broadcasts ``input`` to ``shape``."""
    return bind(_O["broadcast_to"], input, shape=_static_dims(shape, "broadcast_to"))


def gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
           batch_dims: int = 0, name: str | None = None) -> Tensor:
    """Slices of ``params`` along ``axis`` at ``indices``; out-of-range indices raise
    ``InvalidArgumentError`` (as TensorFlow does on the CPU).

    >>> import stagecraft as tf
    >>> tf.gather([10, 20, 30], [2, 0]).numpy().tolist()
    [30, 10]
    """
    return bind(_O["gather"], params, indices, axis=0 if axis is None else int(axis),
                batch_dims=int(batch_dims))


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """One-hot encoding; indices outside [0, depth) give rows of ``off_value``.

    >>> import stagecraft as tf
    >>> tf.one_hot([0, 2], 3).numpy().tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if dtype is not None:
        d = _dt.as_dtype(dtype)
    elif on_value is not None:
        d = _t(on_value).dtype
    elif off_value is not None:
        d = _t(off_value).dtype
    else:
        d = _dt.float32
    on = convert_to_tensor(1 if on_value is None else on_value, d)
    off = convert_to_tensor(0 if off_value is None else off_value, d)
    return bind(_O["one_hot"], indices, on, off, depth=int(depth),
                axis=-1 if axis is None else int(axis))


# --------------------------------------------------------------------------- slicing

def getitem(x: Any, key: Any) -> Tensor:
    """``x[key]`` with ints, slices, ``newaxis`` (None), ``...`` and scalar int tensors."""
    if not isinstance(key, tuple):
        key = (key,)
    spec, dynamic = [], []

    def bound(v: Any) -> Any:
        if v is None or isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return None if v is None else int(v)
        t = _t(v)
        if t.ndim != 0 or not t.dtype.is_integer:
            raise TypeError(f"Slice bounds must be ints, None or scalar int tensors, got {v!r}.")
        if isinstance(t, Tensor) and type(t) is Tensor:  # eager: use the value
            return int(t.numpy())
        dynamic.append(t)
        return f"${len(dynamic) - 1}"

    for k in key:
        if k is None:
            spec.append(("newaxis",))
        elif k is Ellipsis:
            spec.append(("ellipsis",))
        elif isinstance(k, slice):
            spec.append(("slice", bound(k.start), bound(k.stop), bound(k.step)))
        elif isinstance(k, (bool, np.bool_)) or (
                isinstance(k, (list, tuple, np.ndarray, Tensor)) and np.ndim(k) > 0):
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) "
                            f"and scalar int32/int64 tensors are valid indices, got {k!r}. Use "
                            f"tf.gather for a list of indices or tf.where for a mask.")
        else:
            spec.append(("index", bound(k)))
    return bind(_O["strided_slice"], x, *dynamic, spec=tuple(spec))


__all__ = ["zeros", "ones", "fill", "zeros_like", "ones_like", "range", "eye", "identity",
           "stop_gradient", "shape", "size", "rank", "reshape", "transpose", "concat", "stack",
           "unstack", "expand_dims", "squeeze", "tile", "broadcast_to", "gather", "one_hot"]
