"""Array op wrappers: creation, reshaping, joining, gathering, slicing (``stagecraft.*``)."""
from __future__ import annotations

import builtins
import dataclasses
from typing import Any, Sequence

import numpy as np

from stagecraft.eager.bind import bind, gpu_constant_beside
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.shapes import TensorShape, as_dims
from stagecraft.eager.tensor import LATE_BOUND, Tensor
from stagecraft.ops.math_ops import cast, equal, reduce_prod, reduce_sum
from stagecraft.staging.graph_tensor import GraphTensor
from stagecraft.ir.graph import const_value, Literal
from stagecraft.ir.ops.slicing import index_tuple

_O = dict(OPS)


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


# ------------------------------------------------------------------- shape arguments
#
# Every op that takes a shape (zeros, ones, fill, reshape, broadcast_to, tile, eye's
# batch_shape, and random ops) reads it through `normalize_shape`: a Python list or tuple, a
# TensorShape, a NumPy array, a 1-D int tensor, or a list mixing ints and scalar int tensors.
# What is known when tracing becomes static dims (so results keep them); the rest travels as a
# 1-D int tensor into the op's `*_dynamic` twin. `get_static_value` is the analysis behind
# it: `tf.shape(x)[0]` is known when tracing when x's first dimension is (TensorFlow folds it
# the same way).


@dataclasses.dataclass(frozen=True)
class ShapeArg:
    """A normalized shape argument (see :func:`normalize_shape`).

    ``dims``: one entry per dimension, an int where it is known when tracing (or eagerly), None
    where it is only known when the function runs; ``dims`` is None when even the rank is
    unknown. ``tensor``: None when every dim is known (use ``dims``), else a 1-D int32/int64
    tensor holding the whole shape at run time (entries agree with the known ``dims``).
    """

    dims: tuple | None
    tensor: Tensor | None = None

    @property
    def is_static(self) -> bool:
        """Whether every dimension is known now (then ``tensor`` is None)."""
        return self.tensor is None


_SHAPE_TYPES = (int, np.integer)
_DEPTH = 32  # how far get_static_value follows producers


def normalize_shape(shape: Any, what: str, minus_one: bool = False) -> ShapeArg:
    """Reads a shape argument: a list/tuple of ints and scalar int tensors, a TensorShape, a
    NumPy array, a 1-D int tensor, or a single int (one dimension). Returns its static dims and,
    when some dim is only known when the function runs, the shape as a 1-D int tensor.

    ``what`` names the caller in errors (e.g. "tf.zeros"); ``minus_one`` allows -1 entries
    (reshape's inferred dimension), which are kept as -1 in ``dims``. Values are not range
    checked here (the op does it, with the same message eagerly and staged).

    >>> import stagecraft as tf
    >>> normalize_shape([2, tf.constant(3)], "tf.zeros")
    ShapeArg(dims=(2, 3), tensor=None)
    >>> seen = []
    >>> @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    ... def f(x):
    ...     s = normalize_shape([tf.shape(x)[0], tf.shape(x)[1]], "tf.zeros")
    ...     seen.append((s.dims, s.tensor.shape))
    ...     return x
    >>> _ = f(tf.ones([2, 3])); seen
    [((None, 3), TensorShape([2]))]
    """
    if isinstance(shape, TensorShape):
        if shape.rank is None or not shape.is_fully_defined():
            raise ValueError(f"{what}: the shape {shape} has unknown dimensions. Pass the shape "
                             f"the tensor has when the function runs instead: tf.shape(x), or "
                             f"a list such as [tf.shape(x)[0], 8].")
        return ShapeArg(tuple(shape.as_list()))
    if isinstance(shape, _SHAPE_TYPES) and not isinstance(shape, (bool, np.bool_)):
        return ShapeArg((int(shape),))
    if isinstance(shape, (Tensor, np.ndarray)):
        return _shape_from_tensor(shape, what)
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{what}: a shape must be a list or tuple of ints, a TensorShape or a "
                        f"1-D int32/int64 tensor, got {type(shape).__name__} {shape!r}.")
    dims: list = []
    parts: list = []  # per dim: an int or a scalar int tensor (the dynamic ones)
    for i, d in enumerate(shape):
        dim = _dim(d, i, shape, what)
        if isinstance(dim, Tensor):
            known = get_static_value(dim)
            if known is not None:
                dim = int(known)
        dims.append(dim if isinstance(dim, int) else None)
        parts.append(dim)
    if all(isinstance(p, int) for p in parts):
        return ShapeArg(tuple(dims))
    dtype = _dt.int64 if any(isinstance(p, Tensor) and p.dtype == _dt.int64 for p in parts) \
        else _dt.int32
    scalars = [convert_to_tensor(p, dtype) if isinstance(p, int) else
               p if p.dtype == dtype else cast(p, dtype) for p in parts]
    return ShapeArg(tuple(dims), stack(scalars))


def _dim(d: Any, i: int, shape: Any, what: str) -> Any:
    """Entry ``i`` of a list shape: an int, or a scalar int tensor known only at run time."""
    if isinstance(d, (bool, np.bool_)) or d is None:
        raise TypeError(f"{what}: dimension {i} of the shape {list(shape)!r} is {d!r}; each "
                        f"dimension must be an int or a scalar int tensor. For a size known "
                        f"only when the function runs use tf.shape(x)[{i}].")
    if isinstance(d, _SHAPE_TYPES):
        return int(d)
    if isinstance(d, np.ndarray) and d.ndim == 0 and d.dtype.kind in "iu":
        return int(d)
    if isinstance(d, Tensor):
        if d.dtype not in _dt.INTS or d.shape.rank != 0:
            raise TypeError(f"{what}: dimension {i} of the shape must be an int or a scalar "
                            f"int32/int64 tensor, got a {d.dtype.name} tensor of shape "
                            f"{d.shape}. Cast it with tf.cast(..., tf.int32).")
        return int(d.numpy()) if type(d) is Tensor else d
    raise TypeError(f"{what}: dimension {i} of the shape is {d!r} ({type(d).__name__}); each "
                    f"dimension must be an int or a scalar int32/int64 tensor.")


def _shape_from_tensor(t: Any, what: str) -> ShapeArg:
    dtype = _dt.from_numpy(t.dtype) if isinstance(t, np.ndarray) else t.dtype
    if dtype not in _dt.INTS:
        raise TypeError(f"{what}: a shape tensor must be int32 or int64, got {dtype.name}. "
                        f"Cast it with tf.cast(shape, tf.int32).")
    rank = t.ndim if isinstance(t, np.ndarray) else t.shape.rank
    if rank not in (0, 1, None):
        raise ValueError(f"{what}: a shape tensor must be 1-D (one entry per dimension), got "
                         f"shape {list(np.shape(t)) if isinstance(t, np.ndarray) else t.shape}.")
    if isinstance(t, np.ndarray) or type(t) is Tensor:
        return ShapeArg(tuple(int(d) for d in np.reshape(np.asarray(t), -1)))
    known = get_static_value(t, partial=True)
    if rank == 0:
        t = reshape(t, [1])
        known = None if known is None else np.reshape(known, 1)
    if known is None:
        n = t.shape[0]
        return ShapeArg(None if n is None else (None,) * n, t)
    dims = tuple(None if d is None else int(d) for d in known)
    return ShapeArg(dims, None if None not in dims else t)


def _static_dims(shape: Any, what: str) -> tuple[int, ...]:
    """A shape that must be known when tracing (ops without a run-time-shape form)."""
    s = normalize_shape(shape, what)
    if not s.is_static:
        raise ValueError(f"{what}: the shape must be known when the function is traced, but "
                         f"{s.dims} has dimensions known only when it runs; give them as "
                         f"Python ints (or as an input_signature with those sizes).")
    return s.dims


def get_static_value(tensor: Any, partial: bool = False) -> np.ndarray | None:
    """The value of ``tensor`` if it can be computed without running the function: an eager
    tensor's value, a constant, ``tf.shape(x)`` of a tensor of known shape and simple integer
    arithmetic, slices, stacks and casts of those. None when it is not known. With
    ``partial=True`` a 1-D result may hold None where only some entries are known (an object
    array), e.g. ``tf.shape(x)`` for x of static shape [None, 3] gives [None, 3].

    >>> import stagecraft as tf
    >>> seen = []
    >>> @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    ... def f(x):
    ...     s = tf.shape(x)
    ...     seen.append((tf.get_static_value(s[0]), int(tf.get_static_value(s[1])),
    ...                  tf.get_static_value(s, partial=True).tolist()))
    ...     return x
    >>> _ = f(tf.ones([2, 3])); seen
    [(None, 3, [None, 3])]
    """
    if isinstance(tensor, GraphTensor):
        known = _known(tensor._node, tensor._graph, 0)
        if known is None or (not partial and any(v is None for v in known.reshape(-1))):
            return None
        if any(v is None for v in known.reshape(-1)):
            return known
        return np.asarray(known.tolist(), tensor.dtype.np)
    if isinstance(tensor, Tensor):
        return tensor.numpy()
    if isinstance(tensor, (np.ndarray, np.generic, int, float, bool)):
        return np.asarray(tensor)
    return None


def _known(v: Any, g: Any, depth: int) -> np.ndarray | None:
    """What is known of the int value ``v`` of graph ``g`` (rank 0 or 1) while tracing: an
    object array with ints where known and None elsewhere, or None."""
    t = v.type
    if t.dtype not in _dt.INTS or t.shape is None or len(t.shape) > 1:
        return None
    unknown = None if None in t.shape else np.full(t.shape, None, object)
    if isinstance(v, Literal):
        return np.array(int(v.value), object)
    if depth > _DEPTH:
        return unknown
    found = _producer(v, g)
    if found is None:
        return unknown
    if isinstance(found, Tensor):  # a captured eager tensor
        return np.asarray(found.numpy()).astype(object)
    e, g = found
    ins = [_known(x, g, depth + 1) for x in e.inputs] if e.op in _FOLLOW else []
    out = _rule(e, ins)
    return unknown if out is None else out


def _rule(e: Any, ins: list) -> np.ndarray | None:
    """The known value of equation ``e``'s output from its inputs' (see ``_known``)."""
    op, p = e.op, e.params
    if op == "const":
        return np.asarray(const_value(e)).astype(object)
    if op == "shape":
        dims = e.inputs[0].type.shape
        return None if dims is None else np.array(list(dims), object)
    if any(x is None for x in ins):
        return None
    if op in ("cast", "identity") and e.inputs[0].type.dtype in _dt.INTS:
        return ins[0]
    if op == "strided_slice" and len(e.inputs) == 1:
        return np.asarray(ins[0][index_tuple(p["spec"])], object)
    if op == "expand_dims":
        return np.expand_dims(ins[0], p["axis"])
    if op == "concat":
        return np.concatenate(ins, axis=p["axis"])
    arith = _ARITH.get(op)
    if arith is not None and ins[0].ndim == 0 and ins[1].ndim == 0:
        a, b = ins[0][()], ins[1][()]
        if a is None or b is None or (op in ("floordiv", "floormod") and b == 0):
            return np.array(None, object)
        return np.array(int(arith(a, b)), object)
    return None


_ARITH = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
          "multiply": lambda a, b: a * b, "floordiv": lambda a, b: a // b,
          "floormod": lambda a, b: a % b, "maximum": max, "minimum": min}
_FOLLOW = frozenset({"cast", "identity", "strided_slice", "expand_dims", "concat", *_ARITH})


def _producer(v: Any, g: Any) -> Any:
    """The equation (and its graph) that defines ``v``, following captures out of branch and
    loop bodies; an eager tensor for a captured one; None for an input of the function."""
    while True:
        for e in reversed(g.builder.eqns):
            if any(o is v for o in e.outputs):
                return e, g
        src = g._capture_source.get(v.uid)
        if src is None or g.parent is None:
            return src if isinstance(src, Tensor) else None
        if isinstance(src, Tensor):
            return src
        v, g = src, g.parent


# --------------------------------------------------------------------------- creation

def zeros(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros. ``shape`` may mix ints and scalar int tensors, or be a 1-D int
    tensor (a size known only when the function runs, e.g. ``tf.shape(x)[0]``).

    >>> import stagecraft as tf
    >>> tf.zeros([2], tf.int32).numpy().tolist()
    [0, 0]
    >>> f = tf.function(lambda x: tf.zeros([tf.shape(x)[0], 2]),
    ...                 input_signature=[tf.TensorSpec([None])])
    >>> f(tf.ones([3])).shape
    TensorShape([3, 2])
    """
    return _fill(shape, np.zeros((), _dt.as_dtype(dtype).np), "tf.zeros")


def ones(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """A tensor of ones (``shape`` as for :func:`zeros`).

    >>> import stagecraft as tf
    >>> tf.ones(tf.constant([1, 2])).numpy().tolist()
    [[1.0, 1.0]]
    """
    return _fill(shape, np.ones((), _dt.as_dtype(dtype).np), "tf.ones")


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value`` (whose dtype it takes);
    ``dims`` as for :func:`zeros`.

    >>> import stagecraft as tf
    >>> tf.fill([2, tf.constant(1)], 7).numpy().tolist()
    [[7], [7]]
    """
    return _fill(dims, value, "tf.fill")


def _fill(shape: Any, value: Any, what: str) -> Tensor:
    s = normalize_shape(shape, what)
    if s.tensor is None:
        return bind(_O["fill"], value, dims=s.dims)
    return bind(_O["fill_dynamic"], value, s.tensor, static=s.dims)


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Zeros with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    out = bind(_O["zeros_like"], input)
    return out if dtype is None else _cast(out, dtype)


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Ones with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    out = bind(_O["ones_like"], input)
    return out if dtype is None else _cast(out, dtype)


def _cast(x: Tensor, dtype: Any) -> Tensor:
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
    return bind(_O["range"], *[cast(a, d) for a in args])


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None,
        dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """The identity matrix; ``batch_shape`` adds leading dimensions. Sizes may be scalar int
    tensors and ``batch_shape`` any shape argument (see :func:`zeros`).

    >>> import stagecraft as tf
    >>> tf.eye(2, batch_shape=[1]).numpy().tolist()
    [[[1.0, 0.0], [0.0, 1.0]]]
    """
    d = _dt.as_dtype(dtype)
    rows, cols = normalize_shape([num_rows, num_rows if num_columns is None else num_columns],
                                 "tf.eye").dims
    if rows is not None and cols is not None:
        out = bind(_O["eye"], num_rows=rows, num_columns=cols, dtype=d)
    else:  # a size known only when the function runs: compare row and column numbers
        c = num_rows if num_columns is None else num_columns
        out = cast(equal(expand_dims(range(num_rows), 1), expand_dims(range(c), 0)), d)
    if batch_shape is None:
        return out
    b = normalize_shape(batch_shape, "tf.eye")
    if b.tensor is None and rows is not None and cols is not None:
        return broadcast_to(out, b.dims + (rows, cols))
    return broadcast_to(out, concat([_shape_tensor(b), shape(out)], 0))


def _shape_tensor(s: ShapeArg) -> Tensor:
    """The int32 tensor of a normalized shape."""
    if s.tensor is None:
        return convert_to_tensor(np.array(s.dims, np.int32))
    return s.tensor if s.tensor.dtype == _dt.int32 else cast(s.tensor, _dt.int32)


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
    return reduce_prod(shape(input, out_type))


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input`` as a scalar int32 tensor (computed when the
    function runs if the rank is unknown while tracing).

    >>> import stagecraft as tf
    >>> int(tf.rank(tf.zeros([2, 3])))
    2
    """
    t = _t(input)
    if t.shape.rank is None:
        return reduce_sum(ones_like(shape(t)))
    return convert_to_tensor(np.array(t.shape.rank, np.int32))


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """The same values in a new shape; one dimension may be -1. ``shape`` may mix ints and
    scalar int tensors, or be a 1-D int tensor (see :func:`zeros`).

    >>> import stagecraft as tf
    >>> tf.reshape(tf.range(6), [2, -1]).shape
    TensorShape([2, 3])
    >>> f = tf.function(lambda x: tf.reshape(x, [tf.shape(x)[0], -1]),
    ...                 input_signature=[tf.TensorSpec([None, 2, 2])])
    >>> f(tf.ones([3, 2, 2])).shape
    TensorShape([3, 4])
    """
    s = normalize_shape(shape, "tf.reshape", minus_one=True)
    if s.tensor is None:
        return bind(_O["reshape"], tensor, shape=s.dims)
    return bind(_O["reshape_dynamic"], tensor, s.tensor, static=s.dims)


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



LATE_BOUND["stack"] = stack  # converting lists that hold tensors

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
    """Repeats the input ``multiples[i]`` times along dimension i (multiples as a shape
    argument, see :func:`zeros`).

    >>> import stagecraft as tf
    >>> tf.tile([[1, 2]], [2, tf.constant(1)]).numpy().tolist()
    [[1, 2], [1, 2]]
    """
    s = normalize_shape(multiples, "tf.tile")
    if s.tensor is None:
        return bind(_O["tile"], input, multiples=s.dims)
    return bind(_O["tile_dynamic"], input, s.tensor, static=s.dims)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Broadcasts ``input`` to ``shape`` (a shape argument, see :func:`zeros`).

    >>> import stagecraft as tf
    >>> tf.broadcast_to([1, 2], [2, 2]).numpy().tolist()
    [[1, 2], [1, 2]]
    """
    s = normalize_shape(shape, "tf.broadcast_to")
    if s.tensor is None:
        return bind(_O["broadcast_to"], input, shape=s.dims)
    return bind(_O["broadcast_to_dynamic"], input, s.tensor, static=s.dims)


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
    depth = int(depth)
    if depth < 0:  # the eager path skips shape inference, where the staged path says this
        raise InvalidArgumentError(f"one_hot: depth must be non-negative, got {depth}. "
                                   f"Pass the number of classes (>= 0).")
    on = off = None
    if on_value is None and off_value is None:   # GPU indices: 1 and 0 uploaded once, kept
        on, off = (gpu_constant_beside(indices, v, d.np) for v in (1, 0))
    if on is None or off is None:
        on = convert_to_tensor(1 if on_value is None else on_value, d)
        off = convert_to_tensor(0 if off_value is None else off_value, d)
    return bind(_O["one_hot"], indices, on, off, depth=depth,
                axis=-1 if axis is None else int(axis))


# --------------------------------------------------------------------------- slicing

def getitem(x: Any, key: Any) -> Tensor:
    """``x[key]`` with ints, slices, ``newaxis`` (None), ``...`` and scalar int tensors."""
    spec, dynamic = slice_spec(key)
    return bind(_O["strided_slice"], x, *dynamic, spec=spec)


def slice_spec(key: Any) -> tuple[tuple, list]:
    """The ``spec`` attribute of ``strided_slice`` for ``x[key]`` and its run-time bounds
    (the scalar int tensors it names ``"$k"``).

    >>> slice_spec((1, slice(None, 2)))
    ((('index', 1), ('slice', None, 2, None)), [])
    """
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
    return tuple(spec), dynamic


__all__ = ["get_static_value", "zeros", "ones", "fill", "zeros_like", "ones_like", "range",
           "eye", "identity", "stop_gradient", "shape", "size", "rank", "reshape", "transpose", "concat", "stack",
           "unstack", "expand_dims", "squeeze", "tile", "broadcast_to", "gather", "one_hot"]
