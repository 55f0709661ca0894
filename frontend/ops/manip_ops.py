"""Array manipulation built from the primitives (slicing, concat, gather, reshape, transpose,
matmul): ``split``, ``pad``, ``slice``, ``reverse``, ``roll``, ``repeat``, ``linspace``,
``meshgrid``, ``tensordot``. Being compositions, they work eagerly and staged on every backend
and are differentiated through their primitives. Shape arguments must be known when the op
is called (Python ints, or tensors whose value is known while tracing)."""
from __future__ import annotations

from typing import Any

import numpy as np

from builtins import slice as builtin_slice  # (this module defines tf.slice)

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["split", "pad", "slice", "reverse", "roll", "repeat", "linspace", "meshgrid",
           "tensordot"]


def _static(value: Any, what: str) -> Any:
    """A Python value of an argument that must be known now."""
    known = _a.get_static_value(value) if isinstance(value, Tensor) else value
    if known is None:
        raise ValueError(f"{what} must be known when the op is traced (a Python value, or a "
                         f"tensor computed from constants); it depends on the function's "
                         f"inputs.")
    return np.asarray(known).tolist()


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {rank}.")
    return axis % rank


def _take(x: Tensor, axis: int, start: int | None, stop: int | None,
          step: int | None = None) -> Tensor:
    index = [builtin_slice(None)] * x.shape.rank
    index[axis] = builtin_slice(start, stop, step)
    return x[tuple(index)]


def split(value: Any, num_or_size_splits: Any, axis: int = 0, num: int | None = None,
          name: str | None = None) -> list:
    """Splits ``value`` along ``axis`` into equal parts (an int) or parts of the given sizes
    (a list; one size may be -1 for the rest).

    >>> import stagecraft as tf
    >>> [t.shape for t in tf.split(tf.zeros([6, 2]), [1, -1, 2])]
    [TensorShape([1, 2]), TensorShape([3, 2]), TensorShape([2, 2])]
    """
    value = convert_to_tensor(value)
    axis = _axis(int(_static(axis, "split: axis")), value.shape.rank, "split")
    n = value.shape[axis]
    if n is None:
        raise ValueError("split: the size of the split axis must be known.")
    sizes = _static(num_or_size_splits, "split: num_or_size_splits")
    if isinstance(sizes, int):
        if sizes <= 0 or n % sizes:
            raise ValueError(f"split: cannot split a dimension of size {n} into {sizes} equal "
                             f"parts.")
        sizes = [n // sizes] * sizes
    if sizes.count(-1) > 1:
        raise ValueError("split: at most one size may be -1.")
    if -1 in sizes:
        sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
    if sum(sizes) != n or min(sizes) < 0:
        raise ValueError(f"split: sizes {sizes} do not add up to the dimension's size {n}.")
    bounds = np.cumsum([0, *sizes]).tolist()
    return [_take(value, axis, a, b) for a, b in zip(bounds, bounds[1:])]


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None) -> Tensor:
    """Pads each axis ``i`` with ``paddings[i] = [before, after]`` elements: the value
    ``constant_values`` (``"CONSTANT"``), or the mirror image without (``"REFLECT"``) or with
    (``"SYMMETRIC"``) the edge element.

    >>> import stagecraft as tf
    >>> tf.pad(tf.constant([[1, 2]]), [[1, 0], [0, 2]]).numpy().tolist()
    [[0, 0, 0, 0], [1, 2, 0, 0]]
    >>> tf.pad(tf.constant([1, 2, 3]), [[2, 1]], "REFLECT").numpy().tolist()
    [3, 2, 1, 2, 3, 2]
    """
    x = convert_to_tensor(tensor)
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be CONSTANT, REFLECT or SYMMETRIC; got {mode!r}.")
    widths = _static(paddings, "pad: paddings")
    if len(widths) != x.shape.rank or any(len(w) != 2 or min(w) < 0 for w in widths):
        raise ValueError(f"pad: paddings must be one non-negative [before, after] pair per "
                         f"axis ({x.shape.rank}); got {widths}.")
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = x.shape[axis]
        if mode == "CONSTANT":
            def block(k: int) -> Tensor:
                dims = [k if i == axis else (d if d is not None else _a.shape(x)[i])
                        for i, d in enumerate(x.shape.as_list())]
                return _a.fill(dims, _m.cast(convert_to_tensor(constant_values), x.dtype))
            parts = [block(before), x, block(after)]
        else:
            edge = 0 if mode == "SYMMETRIC" else 1
            if n is None or before > n - edge or after > n - edge:
                raise ValueError(f"pad: {mode} padding of {[before, after]} needs a dimension "
                                 f"of at least {max(before, after) + edge}; got {n}.")
            parts = [reverse(_take(x, axis, edge, edge + before), [axis]), x,
                     reverse(_take(x, axis, n - edge - after, n - edge), [axis])]
        x = _a.concat([p for p in parts if p.shape[axis] != 0], axis)
    return x


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """The block of ``input_`` starting at ``begin`` of shape ``size`` (-1: to the end).

    >>> import stagecraft as tf
    >>> tf.slice(tf.reshape(tf.range(12), [3, 4]), [1, 1], [2, -1]).numpy().tolist()
    [[5, 6, 7], [9, 10, 11]]
    """
    input_ = convert_to_tensor(input_)
    begin, size = _static(begin, "slice: begin"), _static(size, "slice: size")
    index = tuple(builtin_slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    return input_[index]


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """``tensor`` with the order of its elements reversed along each axis in ``axis``.

    >>> import stagecraft as tf
    >>> tf.reverse(tf.constant([[1, 2], [3, 4]]), [1]).numpy().tolist()
    [[2, 1], [4, 3]]
    """
    tensor = convert_to_tensor(tensor)
    axes = _static(axis, "reverse: axis")
    for ax in [axes] if isinstance(axes, int) else axes:
        tensor = _take(tensor, _axis(ax, tensor.shape.rank, "reverse"), None, None, -1)
    return tensor


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Rotates the elements along ``axis`` by ``shift`` places (elements leaving one end come
    back at the other).

    >>> import stagecraft as tf
    >>> tf.roll(tf.constant([1, 2, 3, 4]), 1, 0).numpy().tolist()
    [4, 1, 2, 3]
    """
    x = convert_to_tensor(input)
    shifts, axes = _static(shift, "roll: shift"), _static(axis, "roll: axis")
    if isinstance(shifts, int):
        shifts, axes = [shifts], [axes] if isinstance(axes, int) else axes
    for s, ax in zip(shifts, [axes] if isinstance(axes, int) else axes):
        ax = _axis(ax, x.shape.rank, "roll")
        n = x.shape[ax]
        if n is None:
            raise ValueError("roll: the rolled axis must have a known size.")
        s %= max(n, 1)
        if s:
            x = _a.concat([_take(x, ax, n - s, None), _take(x, ax, None, n - s)], ax)
    return x


def repeat(input: Any, repeats: Any, axis: int | None = None,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Repeats each element ``repeats`` times (an int, or one count per element) along
    ``axis`` (the flattened tensor when None).

    >>> import stagecraft as tf
    >>> tf.repeat(tf.constant([1, 2]), [2, 3], axis=0).numpy().tolist()
    [1, 1, 2, 2, 2]
    """
    x = convert_to_tensor(input)
    if axis is None:
        x, axis = _a.reshape(x, [-1]), 0
    axis = _axis(axis, x.shape.rank, "repeat")
    n = x.shape[axis]
    if n is None:
        raise ValueError("repeat: the repeated axis must have a known size.")
    counts = _static(repeats, "repeat: repeats")
    index = np.repeat(np.arange(n), counts).astype(np.int64)
    return _a.gather(x, convert_to_tensor(index), axis=axis)


def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included).

    >>> import stagecraft as tf
    >>> tf.linspace(0.0, 1.0, 5).numpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if axis != 0:
        raise ValueError("linspace: only axis=0 (scalar start and stop) is supported.")
    start, stop = convert_to_tensor(start), convert_to_tensor(stop)
    if not start.dtype.is_floating:
        start = _m.cast(start, "float64" if start.dtype.name == "int64" else "float32")
    stop = _m.cast(stop, start.dtype)
    n = int(_static(num, "linspace: num"))
    if n == 1:
        return _a.reshape(start, [1])
    step = _m.truediv(_m.subtract(stop, start), float(n - 1))
    values = _m.add(start, _m.multiply(_m.cast(_a.range(n), start.dtype), step))
    # the last value is exactly `stop`, as numpy's and TensorFlow's
    return _a.concat([values[:n - 1], _a.reshape(stop, [1])], 0)


def meshgrid(*args: Any, **kwargs: Any) -> list:
    """Coordinate grids of the 1-D ``args``: with ``indexing="xy"`` (default) the first two
    axes are swapped, as NumPy's.

    >>> import stagecraft as tf
    >>> x, y = tf.meshgrid([1, 2, 3], [4, 5])
    >>> x.numpy().tolist(), y.shape
    ([[1, 2, 3], [1, 2, 3]], TensorShape([2, 3]))
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs or indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: the only options are indexing='xy' or 'ij'.")
    vectors = [_a.reshape(convert_to_tensor(v), [-1]) for v in args]
    sizes = [v.shape[0] for v in vectors]
    if indexing == "xy" and len(vectors) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vectors):
        k = (1 - i if i < 2 else i) if indexing == "xy" and len(vectors) > 1 else i
        shape = [1] * len(vectors)
        shape[k] = -1
        out.append(_a.broadcast_to(_a.reshape(v, shape), sizes))
    return out


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sums products over ``axes`` of ``a`` and ``b``: an int ``n`` (the last ``n`` of ``a``
    with the first ``n`` of ``b``) or a pair of axis lists.

    >>> import stagecraft as tf
    >>> tf.tensordot(tf.ones([2, 3, 4]), tf.ones([4, 5]), 1).shape
    TensorShape([2, 3, 5])
    """
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    axes = _static(axes, "tensordot: axes")
    if isinstance(axes, int):
        axes = [list(range(a.shape.rank - axes, a.shape.rank)), list(range(axes))]
    a_axes = [x % a.shape.rank for x in ([axes[0]] if isinstance(axes[0], int) else axes[0])]
    b_axes = [x % b.shape.rank for x in ([axes[1]] if isinstance(axes[1], int) else axes[1])]
    a_free = [i for i in range(a.shape.rank) if i not in a_axes]
    b_free = [i for i in range(b.shape.rank) if i not in b_axes]
    a_dims, b_dims = a.shape.as_list(), b.shape.as_list()
    if None in a_dims or None in b_dims:
        raise ValueError("tensordot: the operands' shapes must be known.")
    inner = int(np.prod([a_dims[i] for i in a_axes]))
    a2 = _a.reshape(_a.transpose(a, a_free + a_axes), [-1, inner])
    b2 = _a.reshape(_a.transpose(b, b_axes + b_free), [inner, -1])
    out_shape = [a_dims[i] for i in a_free] + [b_dims[i] for i in b_free]
    return _a.reshape(_m.matmul(a2, b2), out_shape)
