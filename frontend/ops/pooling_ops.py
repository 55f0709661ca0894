"""``tf.nn`` pooling: ``max_pool``/``avg_pool`` (1-D to 3-D, by the input's rank), their
``1d``/``2d``/``3d`` spellings, ``pool`` and ``max_pool_with_argmax``, with TensorFlow's
arguments: ``ksize``/``strides`` as an int or a list of length 1, N or N+2, ``padding``
``"SAME"``/``"VALID"`` (``max_pool`` also takes explicit pairs) and channels-last or
channels-first ``data_format``.

The primitives (``ir/ops/pooling.py``) are channels-last with explicit padding; SAME is
resolved here as TensorFlow does it (output ``ceil(size / stride)``, the extra padding after).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _spatial_rank(op: str, x: Tensor) -> int:
    rank = x.shape.rank
    if rank is None or not 3 <= rank <= 5:
        raise ValueError(f"{op}: the input must have rank 3, 4 or 5 (batch, 1 to 3 spatial dims, "
                         f"channels), got shape {x.shape}.")
    return rank - 2


def _channels_first(op: str, data_format: str | None, n: int) -> bool:
    last, first = _FORMATS[n]
    if data_format is None or data_format == last:
        return False
    if data_format == first:
        return True
    raise ValueError(f"{op}: data_format {data_format!r} does not fit a {n}-D pooling; use "
                     f"{last!r} (channels last) or {first!r} (channels first).")


def _spatial_values(op: str, what: str, value: Any, n: int, channels_first: bool) -> tuple:
    """``ksize``/``strides``: an int, or a list of length 1, N or N+2 (batch and channel
    entries must then be 1) -> N spatial ints."""
    values = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(values) == 1:
        values = values * n
    elif len(values) == n + 2:
        c = 1 if channels_first else n + 1
        if values[0] != 1 or values[c] != 1:
            raise ValueError(f"{op}: {what} {list(values)} pools over the batch or channel "
                             f"dimension, which is not supported; use 1 there.")
        values = [v for i, v in enumerate(values) if i not in (0, c)]
    elif len(values) != n:
        raise ValueError(f"{op}: {what} must be an int or a list of 1, {n} or {n + 2} ints for a "
                         f"{n}-D pooling, got {value!r}.")
    if any(v < 1 for v in values):
        raise ValueError(f"{op}: {what} must be positive, got {value!r}.")
    return tuple(values)


def same_padding(sizes: Sequence[int | None], ksize: Sequence[int], strides: Sequence[int],
                 op: str) -> tuple:
    """TensorFlow's SAME padding: ``(before, after)`` per dim so that the output has
    ``ceil(size / stride)`` positions, the odd element of padding after.

    >>> same_padding([5, 4], [3, 2], [2, 2], "max_pool")
    ((1, 1), (0, 0))
    """
    pads = []
    for d, k, s in zip(sizes, ksize, strides):
        if d is None:
            raise ValueError(f"{op}: padding='SAME' needs known spatial dimensions, got "
                             f"{list(sizes)}; give the function an input_signature with known "
                             f"spatial sizes, or use padding='VALID'.")
        total = max((math.ceil(d / s) - 1) * s + k - d, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _padding(op: str, padding: Any, sizes: list, ksize: tuple, strides: tuple,
             channels_first: bool, explicit_ok: bool) -> tuple:
    n = len(ksize)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0),) * n
        if mode == "SAME":
            return same_padding(sizes, ksize, strides, op)
    elif explicit_ok and isinstance(padding, (list, tuple)) and len(padding) == n + 2:
        pairs = [tuple(int(v) for v in p) for p in padding]
        c = 1 if channels_first else n + 1
        if pairs[0] != (0, 0) or pairs[c] != (0, 0):
            raise ValueError(f"{op}: explicit padding {padding!r} pads the batch or channel "
                             f"dimension; only spatial dimensions can be padded.")
        return tuple(p for i, p in enumerate(pairs) if i not in (0, c))
    allowed = "'SAME', 'VALID' or a list of [before, after] pairs per dimension" \
        if explicit_ok else "'SAME' or 'VALID'"
    raise ValueError(f"{op}: padding must be {allowed}, got {padding!r}.")


def _to_last(x: Tensor, n: int) -> Tensor:
    return _a.transpose(x, [0] + list(range(2, n + 2)) + [1])


def _to_first(x: Tensor, n: int) -> Tensor:
    return _a.transpose(x, [0, n + 1] + list(range(1, n + 1)))


def _pool(op_name: str, api: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
          data_format: str | None, n: int | None = None, explicit_ok: bool = False) -> Tensor:
    x = convert_to_tensor(input)
    spatial = _spatial_rank(api, x)
    if n is not None and spatial != n:
        raise ValueError(f"{api}: expects a rank-{n + 2} input ({_FORMATS[n][0]}), got shape "
                         f"{x.shape}.")
    first = _channels_first(api, data_format, spatial)
    k = _spatial_values(api, "ksize", ksize, spatial, first)
    s = _spatial_values(api, "strides", strides, spatial, first)
    if first:
        x = _to_last(x, spatial)
    sizes = x.shape.as_list()[1:-1]
    pads = _padding(api, padding, sizes, k, s, first, explicit_ok)
    y = bind(OPS[op_name], x, ksize=k, strides=s, padding=pads)
    return _to_first(y, spatial) if first else y


def max_pool(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """The maximum of each ``ksize`` window, moved by ``strides``, over the spatial dims of a
    rank-3, 4 or 5 input (1-D, 2-D or 3-D pooling). ``padding`` is ``"VALID"``, ``"SAME"``
    (padded positions never win) or explicit ``[before, after]`` pairs for every dim.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(16.0), [1, 4, 4, 1])
    >>> tf.nn.max_pool(x, ksize=2, strides=2, padding="VALID")[0, :, :, 0].numpy().tolist()
    [[5.0, 7.0], [13.0, 15.0]]
    """
    return _pool("max_pool", "max_pool", input, ksize, strides, padding, data_format,
                 explicit_ok=True)


def max_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """``max_pool`` of a rank-3 input ``(batch, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.max_pool1d([[[1.0], [3.0], [2.0]]], 2, 1, "SAME").numpy().ravel().tolist()
    [3.0, 3.0, 2.0]
    """
    return _pool("max_pool", "max_pool1d", input, ksize, strides, padding, data_format, 1,
                 explicit_ok=True)


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """``max_pool`` of a rank-4 input ``(batch, height, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.max_pool2d(tf.ones([2, 5, 5, 3]), 3, 2, "SAME").shape
    TensorShape([2, 3, 3, 3])
    """
    return _pool("max_pool", "max_pool2d", input, ksize, strides, padding, data_format, 2,
                 explicit_ok=True)


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """``max_pool`` of a rank-5 input ``(batch, depth, height, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.max_pool3d(tf.ones([1, 4, 4, 4, 2]), 2, 2, "VALID").shape
    TensorShape([1, 2, 2, 2, 2])
    """
    return _pool("max_pool", "max_pool3d", input, ksize, strides, padding, data_format, 3)


def avg_pool(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """The mean of each ``ksize`` window over the spatial dims of a rank-3, 4 or 5 float
    input. With ``"SAME"`` each window is divided by its number of real (unpadded) elements,
    as in TensorFlow.

    >>> import stagecraft as tf
    >>> tf.nn.avg_pool([[[1.0], [3.0], [2.0]]], 2, 2, "SAME").numpy().ravel().tolist()
    [2.0, 2.0]
    """
    return _pool("avg_pool", "avg_pool", input, ksize, strides, padding, data_format)


def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """``avg_pool`` of a rank-3 input ``(batch, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.avg_pool1d([[[1.0], [3.0]]], 2, 2, "VALID").numpy().ravel().tolist()
    [2.0]
    """
    return _pool("avg_pool", "avg_pool1d", input, ksize, strides, padding, data_format, 1)


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """``avg_pool`` of a rank-4 input ``(batch, height, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.avg_pool2d(tf.ones([1, 4, 4, 1]), 2, 2, "VALID").numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    return _pool("avg_pool", "avg_pool2d", input, ksize, strides, padding, data_format, 2)


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """``avg_pool`` of a rank-5 input ``(batch, depth, height, width, channels)``.

    >>> import stagecraft as tf
    >>> tf.nn.avg_pool3d(tf.ones([1, 3, 3, 3, 1]), 2, 1, "SAME").shape
    TensorShape([1, 3, 3, 3, 1])
    """
    return _pool("avg_pool", "avg_pool3d", input, ksize, strides, padding, data_format, 3)


def pool(input: Any, window_shape: Sequence[int], pooling_type: str,  # noqa: A002
         strides: Sequence[int] | None = None, padding: str = "VALID",
         data_format: str | None = None, dilations: Sequence[int] | None = None,
         name: str | None = None) -> Tensor:
    """N-D pooling: ``pooling_type`` ``"MAX"`` or ``"AVG"`` over windows of ``window_shape``
    (one entry per spatial dim), ``strides`` default 1. Only unit ``dilations`` are
    supported (TensorFlow's other values need strides of 1 and run as space-to-batch).

    >>> import stagecraft as tf
    >>> tf.nn.pool(tf.ones([1, 4, 4, 1]), [2, 2], "AVG", strides=[2, 2]).shape
    TensorShape([1, 2, 2, 1])
    """
    x = convert_to_tensor(input)
    n = _spatial_rank("pool", x)
    window = [int(v) for v in window_shape]
    if len(window) != n:
        raise ValueError(f"pool: window_shape {list(window_shape)} needs one entry per spatial "
                         f"dimension of the input {x.shape} ({n}).")
    strides = [1] * n if strides is None else [int(v) for v in strides]
    if dilations is not None and any(int(d) != 1 for d in dilations):
        raise ValueError(f"pool: dilations {list(dilations)} are not supported; only 1 per "
                         f"dimension. Dilate by upsampling the input instead.")
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}.")
    return _pool("max_pool" if kind == "MAX" else "avg_pool", "pool", x, window, strides,
                 padding, data_format, n)


def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
                         data_format: str = "NHWC", output_dtype: Any = "int64",
                         include_batch_in_index: bool = False,
                         name: str | None = None) -> tuple[Tensor, Tensor]:
    """2-D ``max_pool`` and the flat position of each maximum in the input: ``(y * width +
    x) * channels + c``, plus ``batch * height * width * channels`` when
    ``include_batch_in_index`` (TensorFlow's layout). The first maximum of a window wins
    ties; the positions are not differentiable.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(4.0), [1, 2, 2, 1])
    >>> out, arg = tf.nn.max_pool_with_argmax(x, 2, 2, "VALID")
    >>> float(out[0, 0, 0, 0]), int(arg[0, 0, 0, 0])
    (3.0, 3)
    """
    if data_format != "NHWC":
        raise ValueError(f"max_pool_with_argmax: data_format must be 'NHWC', got "
                         f"{data_format!r} (as in TensorFlow).")
    x = convert_to_tensor(input)
    out = _pool("max_pool", "max_pool_with_argmax", x, ksize, strides, padding, data_format, 2)
    k = _spatial_values("max_pool_with_argmax", "ksize", ksize, 2, False)
    s = _spatial_values("max_pool_with_argmax", "strides", strides, 2, False)
    pads = _padding("max_pool_with_argmax", padding, x.shape.as_list()[1:-1], k, s, False, False)
    # Each element's flat position, routed through max_pool_grad_grad: it reads its second
    # argument at every window's first maximum (exact in float64 below 2**53 elements).
    dims = x.shape.as_list()
    if None in dims:
        raise ValueError(f"max_pool_with_argmax: needs a fully known input shape, got "
                         f"{x.shape}.")
    per_batch = dims[1] * dims[2] * dims[3]
    positions = _m.cast(_a.reshape(_a.range(math.prod(dims)), dims), "float64")
    if not include_batch_in_index:
        positions = _m.floormod(positions, float(per_batch))
    arg = bind(OPS["max_pool_grad_grad"], _m.cast(x, "float64"), positions, ksize=k, strides=s,
               padding=pads)
    return out, _m.cast(_a.stop_gradient(arg), output_dtype)


__all__ = ["max_pool", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool", "avg_pool1d",
           "avg_pool2d", "avg_pool3d", "pool", "max_pool_with_argmax"]
