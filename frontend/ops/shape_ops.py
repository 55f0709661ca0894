"""Shape helpers of TensorFlow's top level: ``shape_n``, ``ensure_shape``,
``broadcast_static_shape``, ``broadcast_dynamic_shape``, ``strided_slice`` (all five masks) and
``reverse_sequence``, composed from existing primitives (``strided_slice`` is the primitive that
``x[...]`` uses; ``reverse_sequence`` is a batched ``gather``), so they run eagerly and staged
and carry gradients where TensorFlow's do."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.logging_ops import emit_assert

__all__ = ["shape_n", "ensure_shape", "broadcast_static_shape", "broadcast_dynamic_shape",
           "strided_slice", "reverse_sequence"]


def _staging() -> bool:
    return STATE.get().graph is not None


def shape_n(input: Sequence[Any], out_type: Any = _dt.int32,  # noqa: A002
            name: str | None = None) -> list:
    """The shape of each tensor of ``input`` as a 1-D ``out_type`` tensor.

    >>> import stagecraft as tf
    >>> [s.numpy().tolist() for s in tf.shape_n([tf.zeros([2, 3]), tf.zeros([4])])]
    [[2, 3], [4]]
    """
    return [_a.shape(x, out_type) for x in input]


def _expected_shape(shape: Any) -> TensorShape:
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """``x`` itself, checked to have ``shape`` (None entries match any size) and with that
    static shape from here on. A mismatch known while tracing is a ``ValueError``; dims known
    only when the function runs are checked then (``InvalidArgumentError``), as eagerly.

    >>> import stagecraft as tf
    >>> tf.ensure_shape(tf.zeros([2, 3]), [None, 3]).shape
    TensorShape([2, 3])
    >>> tf.ensure_shape(tf.zeros([2]), [3])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stagecraft.ir.errors.InvalidArgumentError: Shape of tensor x [2] is not compatible with ...
    """
    x = convert_to_tensor(x)
    want = _expected_shape(shape)
    have = x.shape
    fix = ("Pass a tensor of that shape, or loosen the expected shape with None for dims that "
           "may vary.")
    if not have.is_compatible_with(want):
        message = (f"Shape of tensor x {have.as_list() if have.rank is not None else '<unknown>'}"
                   f" is not compatible with expected shape {want.as_list()}. {fix}")
        raise (ValueError if _staging() else InvalidArgumentError)(message)
    if want.rank is None:
        return _a.identity(x)
    if have.rank is None:  # checked when the function runs, then given its static rank
        emit_assert(_m.equal(_a.size(_a.shape(x)), want.rank),
                    f"Shape of tensor x has the wrong rank: expected shape {want.as_list()}. "
                    f"{fix}")
        dyn = _a.shape(x)
        x = _a.reshape(x, [dyn[i] for i in range(want.rank)])
        have = x.shape
    dyn = None
    checks, dims = [], []
    for i, (h, w) in enumerate(zip(have.as_list(), want.as_list())):
        if h is not None:
            dims.append(h)
        elif w is not None:
            dyn = _a.shape(x) if dyn is None else dyn
            checks.append(_m.equal(dyn[i], w))
            dims.append(w)
        else:
            dyn = _a.shape(x) if dyn is None else dyn
            dims.append(dyn[i])
    if not checks:  # nothing to refine
        return _a.identity(x)
    emit_assert(_m.reduce_all(_a.stack(checks)),
                f"Shape of tensor x is not compatible with expected shape {want.as_list()} "
                f"(tf.ensure_shape). {fix}")
    return _a.reshape(x, dims)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The shape that broadcasting two static shapes gives (unknown dims stay unknown unless
    the other side fixes them); ``ValueError`` when they cannot broadcast.

    >>> import stagecraft as tf
    >>> tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 1]))
    TensorShape([None, 4, 3])
    """
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    if x.rank is None or y.rank is None:
        return TensorShape(None)
    a, b = x.as_list()[::-1], y.as_list()[::-1]
    out = []
    for i in range(max(len(a), len(b))):
        da = a[i] if i < len(a) else 1
        db = b[i] if i < len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None or db is None:
            out.append(da if db is None else db)
        elif da == db:
            out.append(da)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {x} and {y} (dimension "
                             f"{da} against {db}).")
    return TensorShape(out[::-1])


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """The broadcast of two shapes given as 1-D int tensors (``InvalidArgumentError`` when
    they cannot broadcast).

    >>> import stagecraft as tf
    >>> tf.broadcast_dynamic_shape(tf.constant([1, 2, 3]), tf.constant([5, 1, 3])).numpy()
    array([5, 2, 3], dtype=int32)
    """
    sx, sy = convert_to_tensor(shape_x), convert_to_tensor(shape_y)
    for s in (sx, sy):
        if s.dtype not in (_dt.int32, _dt.int64) or s.shape.rank != 1:
            raise TypeError(f"tf.broadcast_dynamic_shape: shapes must be 1-D int32/int64 "
                            f"tensors, got a {s.dtype.name} tensor of shape {s.shape}.")
    if sx.dtype != sy.dtype:
        raise TypeError(f"tf.broadcast_dynamic_shape: both shapes must have one dtype, got "
                        f"{sx.dtype.name} and {sy.dtype.name}.")
    nx, ny = sx.shape[0], sy.shape[0]
    if nx is None or ny is None:
        raise ValueError("tf.broadcast_dynamic_shape: the ranks (lengths of the shape vectors) "
                         "must be known while tracing; give the function an input_signature "
                         "with a known rank.")
    n = max(nx, ny)
    ones = [_a.ones([n - nx], sx.dtype), _a.ones([n - ny], sy.dtype)]
    a = _a.concat([ones[0], sx], 0) if nx < n else sx
    b = _a.concat([ones[1], sy], 0) if ny < n else sy
    ok = _m.logical_or(_m.equal(a, b), _m.logical_or(_m.equal(a, 1), _m.equal(b, 1)))
    if not _staging():
        if not bool(np.all(ok.numpy())):
            raise InvalidArgumentError(f"Incompatible shapes: {sx.numpy().tolist()} vs. "
                                       f"{sy.numpy().tolist()} (tf.broadcast_dynamic_shape).")
    else:
        emit_assert(_m.reduce_all(ok), "Incompatible shapes for broadcasting "
                                       "(tf.broadcast_dynamic_shape).")
    return _m.where(_m.equal(a, 1), b, a)


def _entries(v: Any, n: int, what: str) -> list:
    """The ``n`` entries of a begin/end/strides argument: ints or scalar int tensors."""
    if isinstance(v, Tensor):
        if v.shape.rank != 1 or v.dtype not in (_dt.int32, _dt.int64):
            raise TypeError(f"tf.strided_slice: {what} must be a 1-D int32/int64 tensor or a "
                            f"list, got a {v.dtype.name} tensor of shape {v.shape}.")
        known = _a.get_static_value(v)
        return [int(e) for e in known] if known is not None else [v[i] for i in range(n)]
    return list(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else list(v)


def _length(v: Any, what: str) -> int:
    if isinstance(v, Tensor):
        if v.shape.rank != 1 or v.shape[0] is None:
            raise ValueError(f"tf.strided_slice: the length of {what} must be known while "
                             f"tracing (a 1-D tensor of static length).")
        return int(v.shape[0])
    return len(v)


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: str | None = None) -> Tensor:
    """``input_[begin:end:strides]`` with TensorFlow's masks: bit i of ``begin_mask`` /
    ``end_mask`` ignores ``begin[i]`` / ``end[i]`` (the full range), of ``ellipsis_mask`` makes
    entry i ``...``, of ``new_axis_mask`` a new axis of size 1, of ``shrink_axis_mask`` the
    single index ``begin[i]`` (removing that axis).

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(24), [2, 3, 4])
    >>> tf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2], shrink_axis_mask=1).numpy().tolist()
    [[4, 6], [8, 10]]
    >>> tf.strided_slice(x, [1, 0], [0, 2], ellipsis_mask=1, new_axis_mask=2).shape
    TensorShape([2, 3, 4, 1])
    """
    x = convert_to_tensor(input_)
    n = _length(begin, "begin")
    if _length(end, "end") != n or (strides is not None and _length(strides, "strides") != n):
        raise ValueError(f"tf.strided_slice: begin, end and strides must have the same length; "
                         f"got {n}, {_length(end, 'end')} and "
                         f"{n if strides is None else _length(strides, 'strides')}.")
    b, e = _entries(begin, n, "begin"), _entries(end, n, "end")
    s = [1] * n if strides is None else _entries(strides, n, "strides")
    key: list = []
    for i in range(n):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(b[i])
        else:
            if isinstance(s[i], (int, np.integer)) and s[i] == 0:
                raise ValueError(f"tf.strided_slice: strides[{i}] must be non-zero.")
            key.append(slice(None if begin_mask & bit else b[i],
                             None if end_mask & bit else e[i], s[i]))
    return _a.getitem(x, tuple(key))


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int = 0, name: str | None = None) -> Tensor:
    """Reverses the first ``seq_lengths[b]`` entries along ``seq_axis`` of each slice ``b``
    along ``batch_axis``; the rest stay in place.

    >>> import stagecraft as tf
    >>> x = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]])
    >>> tf.reverse_sequence(x, [3, 1], seq_axis=1, batch_axis=0).numpy().tolist()
    [[3, 2, 1, 4], [5, 6, 7, 8]]
    """
    x, lengths = convert_to_tensor(input), convert_to_tensor(seq_lengths)
    if seq_axis is None:
        raise ValueError("tf.reverse_sequence: seq_axis is required (the axis to reverse).")
    if lengths.dtype not in (_dt.int32, _dt.int64) or lengths.shape.rank != 1:
        raise TypeError(f"tf.reverse_sequence: seq_lengths must be a 1-D int32/int64 tensor, "
                        f"got a {lengths.dtype.name} tensor of shape {lengths.shape}.")
    rank = x.shape.rank
    if rank is None:
        raise ValueError("tf.reverse_sequence: the rank of input must be known.")
    seq, batch = seq_axis % rank if -rank <= seq_axis < rank else None, \
        batch_axis % rank if -rank <= batch_axis < rank else None
    if seq is None or batch is None or seq == batch:
        raise ValueError(f"tf.reverse_sequence: seq_axis ({seq_axis}) and batch_axis "
                         f"({batch_axis}) must be two different axes of a rank-{rank} input.")
    nb = x.shape[batch]
    if nb is not None and lengths.shape[0] is not None and lengths.shape[0] != nb:
        raise ValueError(f"tf.reverse_sequence: seq_lengths has {lengths.shape[0]} entries but "
                         f"input has {nb} along batch_axis {batch_axis}.")
    perm = [batch, seq] + [d for d in range(rank) if d not in (batch, seq)]
    moved = _a.transpose(x, perm)
    steps = x.shape[seq] if x.shape[seq] is not None else _a.shape(x)[seq]
    lengths = _m.cast(lengths, _dt.int32)
    in_range = _m.reduce_all(_m.less_equal(lengths, steps))
    message = (f"tf.reverse_sequence: a seq_lengths entry exceeds the size of input along "
               f"seq_axis {seq_axis}.")
    if _staging():
        emit_assert(in_range, message)
    elif not bool(in_range.numpy()):
        raise InvalidArgumentError(f"{message} seq_lengths = {lengths.numpy().tolist()}, size "
                                   f"{int(steps)}.")
    t = _a.expand_dims(_a.range(steps), 0)              # [1, T]
    ln = _a.expand_dims(lengths, 1)                      # [B, 1]
    index = _m.where(_m.less(t, ln), _m.subtract(_m.subtract(ln, 1), t), t + 0 * ln)
    taken = _a.gather(moved, index, axis=1, batch_dims=1)
    return _a.transpose(taken, list(np.argsort(perm)))
