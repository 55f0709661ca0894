"""Convolutions (``tf.nn.conv1d/2d/3d``, ``convolution``, the transposes, depthwise, separable
and atrous): TensorFlow's arguments resolved here into the channels-last ``conv`` and
``conv_backprop_input`` primitives (ir/ops/conv.py).

This module resolves what the primitives leave to the frontend: ``"SAME"``/``"VALID"``/explicit
padding (TensorFlow's SAME rule: total padding ``max((out - 1) * stride + (k - 1) * dilation + 1
- in, 0)`` with ``out = ceil(in / stride)``, the smaller half before), scalar or per-dimension
strides and dilations, channels-first data formats (by transposing), extra leading batch
dimensions (by reshaping) and the feature groups implied by the filter's depth.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops.conv import output_size
from stagecraft.ops import array_ops as _a

# data_format -> (spatial rank, channels first)
_FORMATS = {"NWC": (1, False), "NCW": (1, True), "NHWC": (2, False), "NCHW": (2, True),
            "NDHWC": (3, False), "NCDHW": (3, True)}
_SPATIAL = {1: "width", 2: "height, width", 3: "depth, height, width"}
_KERNEL = {1: "[filter_width, ", 2: "[filter_height, filter_width, ",
           3: "[filter_depth, filter_height, filter_width, "}


def _err(op: str, message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"{op}: {message}")


def _channels_first(op: str, data_format: str | None, r: int) -> bool:
    if data_format is None:
        return False
    fmt = _FORMATS.get(data_format)
    if fmt is None or fmt[0] != r:
        allowed = [k for k, (n, _) in _FORMATS.items() if n == r]
        raise _err(op, f"data_format must be one of {allowed} for {r} spatial dimension(s), "
                       f"got {data_format!r}.")
    return fmt[1]


def _per_dim(op: str, name: str, value: Any, r: int, first: bool) -> tuple[int, ...]:
    """``strides``/``dilations``: None (1), an int, or a list of 1, r or r + 2 ints (the last
    in data_format order, with 1 for the batch and channel entries)."""
    if value is None:
        return (1,) * r
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    items = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(items) == r + 2:
        outer = (items[0], items[1]) if first else (items[0], items[-1])
        if any(int(v) != 1 for v in outer):
            raise _err(op, f"{name} {list(items)} must be 1 in the batch and channel "
                           f"dimensions (TensorFlow supports {name} in the spatial dimensions "
                           f"only).")
        items = items[2:] if first else items[1:-1]
    if len(items) == 1:
        items = items * r
    if len(items) != r or any(int(v) < 1 for v in items):
        raise _err(op, f"{name} must be an int >= 1 or a list of 1, {r} or {r + 2} such ints, "
                       f"got {value!r}.")
    return tuple(int(v) for v in items)


def _padding(op: str, padding: Any, in_dims: Sequence, k_dims: Sequence, strides, dilations,
             first: bool) -> tuple[tuple[int, int], ...]:
    """Explicit (before, after) pairs per spatial dimension."""
    r = len(k_dims)
    if isinstance(padding, str):
        if padding == "VALID":
            return ((0, 0),) * r
        if padding != "SAME":
            raise _err(op, f"padding must be 'SAME', 'VALID' or a list of explicit "
                           f"[before, after] pairs, got {padding!r} (the strings are "
                           f"upper-case).")
        pairs = []
        for i, (n, k, s, d) in enumerate(zip(in_dims, k_dims, strides, dilations)):
            if n is None:
                raise _err(op, f"padding='SAME' needs the size of spatial dimension {i}, "
                               f"which is unknown; fix it in the input_signature or pass "
                               f"explicit padding.")
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            pairs.append((total // 2, total - total // 2))
        return tuple(pairs)
    try:
        pairs = [tuple(int(v) for v in p) for p in padding]
    except TypeError:
        raise _err(op, f"padding must be 'SAME', 'VALID' or a list of [before, after] pairs, "
                       f"got {padding!r}.") from None
    if len(pairs) == r + 2:
        outer = (pairs[0], pairs[1]) if first else (pairs[0], pairs[-1])
        if any(p != (0, 0) for p in outer):
            raise _err(op, f"Nonzero explicit padding in the batch or depth dimensions is not "
                           f"supported: got {padding!r}; pad only the spatial dimensions.")
        pairs = pairs[2:] if first else pairs[1:-1]
    if len(pairs) != r or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise _err(op, f"explicit padding must hold {r + 2} [before, after] pairs of "
                       f"non-negative ints (one per dimension, in data_format order), got "
                       f"{padding!r}.")
    return tuple(pairs)


def _to_last(x: Tensor, r: int) -> Tensor:
    return _a.transpose(x, (0, *range(2, r + 2), 1))


def _to_first(x: Tensor, r: int) -> Tensor:
    return _a.transpose(x, (0, r + 1, *range(1, r + 1)))


def _input(op: str, input: Any, r: int, first: bool) -> tuple[Tensor, tuple | None]:  # noqa: A002
    """The input as ``[N, *spatial, C]`` (channels last, one batch dimension) and the extra
    leading batch dimensions it had (None when it had exactly one)."""
    x = convert_to_tensor(input)
    if x.shape.rank is None or x.shape.rank < r + 2:
        layout = (f"[batch, channels, {_SPATIAL[r]}]" if first else
                  f"[batch, {_SPATIAL[r]}, channels]")
        raise _err(op, f"the input must have rank >= {r + 2} ({layout}), got shape "
                       f"{x.shape}.")
    lead = None
    if x.shape.rank > r + 2:
        dims = x.shape.as_list()
        lead = tuple(dims[:-(r + 1)])
        if any(d is None for d in dims[-(r + 1):]):
            raise _err(op, f"an input with several batch dimensions needs the others known, "
                           f"got {x.shape}.")
        x = _a.reshape(x, [-1, *dims[-(r + 1):]])
    return (_to_last(x, r) if first else x), lead


def _output(y: Tensor, r: int, first: bool, lead: tuple | None) -> Tensor:
    if first:
        y = _to_first(y, r)
    if lead is not None:
        y = _a.reshape(y, [*(-1 if d is None else d for d in lead), *y.shape.as_list()[1:]])
    return y


def _filters(op: str, filters: Any, x: Tensor, r: int) -> Tensor:
    w = filters if isinstance(filters, Tensor) else convert_to_tensor(filters, dtype_hint=x.dtype)
    if w.shape.rank != r + 2:
        raise _err(op, f"the filters must have rank {r + 2} ({_KERNEL[r]}in_channels, "
                       f"out_channels]), got shape {w.shape}.")
    return w


def _groups(op: str, c: int | None, w: Tensor) -> int:
    cg, o = w.shape[-2], w.shape[-1]
    if c is None or cg is None:
        raise _err(op, f"the input's channel dimension and the filters' in_channels must be "
                       f"known, got {c} and {cg}.")
    if c % cg:
        raise _err(op, f"input depth must be evenly divisible by filter depth: {c} vs {cg} "
                       f"(the input's channel dimension has size {c}, the filters' "
                       f"in_channels, dimension {w.shape.rank - 2} of {w.shape}, is {cg}).")
    groups = c // cg
    if o is not None and o % groups:
        raise _err(op, f"output depth must be evenly divisible by number of groups: the "
                       f"filters' out_channels {o} and {groups} groups (input channels {c} / "
                       f"filter in_channels {cg}).")
    return groups


def _conv(op: str, input: Any, filters: Any, strides: Any, padding: Any,  # noqa: A002
          data_format: str | None, dilations: Any, r: int) -> Tensor:
    first = _channels_first(op, data_format, r)
    x, lead = _input(op, input, r, first)
    w = _filters(op, filters, x, r)
    dims = x.shape.as_list()
    s = _per_dim(op, "strides", strides, r, first)
    d = _per_dim(op, "dilations", dilations, r, first)
    pads = _padding(op, padding, dims[1:-1], w.shape.as_list()[:r], s, d, first)
    groups = _groups(op, dims[-1], w)
    for i, (n, k, p) in enumerate(zip(dims[1:-1], w.shape.as_list()[:r], pads)):
        size = output_size(n, k, s[i], d[i], p)
        if size is not None and size < 0:
            raise _err(op, f"Computed output size would be negative: {size} [input_size: {n}, "
                           f"effective_filter_size: {(k - 1) * d[i] + 1}, stride: {s[i]}] in "
                           f"spatial dimension {i}; the filter is larger than the padded "
                           f"input.")
    y = bind(OPS["conv"], x, w, strides=s, dilations=d, padding=pads, groups=groups)
    return _output(y, r, first, lead)


def conv1d(input: Any, filters: Any, stride: Any, padding: Any,  # noqa: A002
           data_format: str = "NWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """1-D convolution (cross-correlation) of ``input [batch, in_width, in_channels]`` with
    ``filters [filter_width, in_channels, out_channels]``.

    ``stride`` and ``dilations`` are an int or a list of 1 or 3 ints; ``padding`` is "SAME",
    "VALID" or explicit ``[[0, 0], [before, after], [0, 0]]``; ``data_format`` "NWC" or "NCW".

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(5.), [1, 5, 1])
    >>> tf.nn.conv1d(x, tf.ones([2, 1, 1]), stride=1, padding="VALID")[0, :, 0].numpy()
    array([1., 3., 5., 7.], dtype=float32)
    """
    return _conv("conv1d", input, filters, stride, padding, data_format, dilations, 1)


def conv2d(input: Any, filters: Any, strides: Any, padding: Any,  # noqa: A002
           data_format: str = "NHWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """2-D convolution (cross-correlation), as ``tf.nn.conv2d``.

    ``input`` is ``[batch, in_height, in_width, in_channels]`` (NHWC; or NCHW with
    ``data_format="NCHW"``; extra leading batch dimensions are allowed), ``filters`` is
    ``[filter_height, filter_width, in_channels / groups, out_channels]``: an input with
    ``groups`` times the filters' in_channels is a grouped convolution. ``strides`` and
    ``dilations`` are an int or a list of 1, 2 or 4 ints; ``padding`` is "SAME" (output size
    ``ceil(in / stride)``), "VALID" (no padding) or explicit pairs
    ``[[0, 0], [top, bottom], [left, right], [0, 0]]``.

    >>> import stagecraft as tf
    >>> x = tf.ones([1, 3, 3, 1])
    >>> tf.nn.conv2d(x, tf.ones([2, 2, 1, 1]), strides=1, padding="SAME")[0, :, :, 0].numpy()
    array([[4., 4., 2.],
           [4., 4., 2.],
           [2., 2., 1.]], dtype=float32)
    """
    return _conv("conv2d", input, filters, strides, padding, data_format, dilations, 2)


def conv3d(input: Any, filters: Any, strides: Any, padding: Any,  # noqa: A002
           data_format: str = "NDHWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """3-D convolution of ``input [batch, depth, height, width, in_channels]`` with
    ``filters [filter_depth, filter_height, filter_width, in_channels, out_channels]``
    (strides, dilations and padding as in :func:`conv2d`; data_format "NDHWC" or "NCDHW").

    >>> import stagecraft as tf
    >>> tf.nn.conv3d(tf.ones([1, 2, 2, 2, 1]), tf.ones([2, 2, 2, 1, 1]), [1, 1, 1, 1, 1],
    ...              "VALID").numpy().ravel().tolist()
    [8.0]
    """
    return _conv("conv3d", input, filters, strides, padding, data_format, dilations, 3)


def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",  # noqa: A002
                data_format: str | None = None, dilations: Any = None,
                name: str | None = None) -> Tensor:
    """N-D convolution (N = 1, 2 or 3, from the filters' rank), as ``tf.nn.convolution``;
    ``data_format`` is None (channels last) or the format name for N ("NWC"/"NCW",
    "NHWC"/"NCHW", "NDHWC"/"NCDHW").

    >>> import stagecraft as tf
    >>> tf.nn.convolution(tf.ones([1, 4, 1]), tf.ones([3, 1, 2]), padding="SAME").shape
    TensorShape([1, 4, 2])
    """
    w = filters if isinstance(filters, Tensor) else convert_to_tensor(filters)
    r = (w.shape.rank or 0) - 2
    if r not in (1, 2, 3):
        raise _err("convolution", f"the filters must have rank 3, 4 or 5 ([*kernel, "
                                  f"in_channels, out_channels]), got shape {w.shape}.")
    return _conv("convolution", input, w, strides, padding, data_format, dilations, r)


# ---------------------------------------------------------------------- transposed

def _static_shape(op: str, output_shape: Any) -> list:
    """``output_shape`` as ints; the batch size may be None (a tensor known only when the
    function runs: the result's batch is the input's)."""
    if isinstance(output_shape, (list, tuple)):  # entries may be scalar tensors
        values = [_a.get_static_value(v) if isinstance(v, Tensor) else v for v in output_shape]
    else:
        value = _a.get_static_value(output_shape) if isinstance(output_shape, Tensor) else \
            output_shape
        values = None if value is None else list(np.asarray(value).reshape(-1))
    if values is None or any(v is None for v in values[1:]):
        raise _err(op, "output_shape must be known when the function is traced, except for its "
                       "batch size (a list such as [tf.shape(x)[0], 10, 10, 8], or a tensor "
                       "whose value is static).")
    return [None if v is None else int(v) for v in values]


def _conv_transpose(op: str, input: Any, filters: Any,  # noqa: A002
                    output_shape: Any, strides: Any, padding: Any, data_format: str | None,
                    dilations: Any, r: int) -> Tensor:
    first = _channels_first(op, data_format, r)
    x, lead = _input(op, input, r, first)
    if lead is not None:
        raise _err(op, f"the input must have rank {r + 2}, got {lead + tuple(x.shape[1:])}.")
    w = _filters(op, filters, x, r)
    out = _static_shape(op, output_shape)
    if len(out) != r + 2:
        raise _err(op, f"output_shape must have {r + 2} entries, got {out}.")
    if first:
        out = [out[0], *out[2:], out[1]]
    k = w.shape.as_list()
    cin = x.shape[-1]
    if cin is not None and k[-1] is not None and cin != k[-1]:
        raise _err(op, f"the input has {cin} channels but the filters {w.shape} expect "
                       f"{k[-1]} (their last dimension, in_channels of the transposed "
                       f"convolution).")
    if k[-2] is not None and out[-1] != k[-2]:
        raise _err(op, f"output_shape {out} has {out[-1]} channels but the filters {w.shape} "
                       f"produce {k[-2]} (dimension {r}, their output channels).")
    s = _per_dim(op, "strides", strides, r, first)
    d = _per_dim(op, "dilations", dilations, r, first)
    pads = _padding(op, padding, out[1:-1], k[:r], s, d, first)
    dims = x.shape.as_list()
    if dims[0] is not None and out[0] is not None and dims[0] != out[0]:
        raise _err(op, f"output_shape's batch size {out[0]} differs from the input's "
                       f"{dims[0]}.")
    for i in range(r):
        expect = output_size(out[1 + i], k[i], s[i], d[i], pads[i])
        if dims[1 + i] is not None and expect != dims[1 + i]:
            raise _err(op, f"output_shape {out} does not match the input: a convolution of "
                           f"spatial size {out[1 + i]} (spatial dimension {i}) with filter "
                           f"size {k[i]}, stride {s[i]}, dilation {d[i]} and padding "
                           f"{padding!r} gives {expect}, but the input has {dims[1 + i]}.")
    y = bind(OPS["conv_backprop_input"], w, x, input_shape=(None, *out[1:]), strides=s,
             dilations=d, padding=pads, groups=1)
    return _output(y, r, first, None)


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose (gradient with respect to the input) of :func:`conv1d`; ``filters`` is
    ``[filter_width, output_channels, in_channels]``.

    >>> import stagecraft as tf
    >>> tf.nn.conv1d_transpose(tf.ones([1, 2, 1]), tf.ones([2, 1, 1]), [1, 4, 1], 2).shape
    TensorShape([1, 4, 1])
    """
    return _conv_transpose("conv1d_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, 1)


def conv2d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NHWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose of :func:`conv2d` (its exact gradient with respect to the input):
    ``filters`` is ``[height, width, output_channels, in_channels]`` and ``output_shape`` the
    shape of the result, which a conv2d with the same arguments maps back to ``input``'s shape.

    >>> import stagecraft as tf
    >>> y = tf.nn.conv2d_transpose(tf.ones([1, 2, 2, 1]), tf.ones([3, 3, 1, 1]),
    ...                            [1, 4, 4, 1], strides=2, padding="SAME")
    >>> y[0, :, :, 0].numpy().tolist()[0]
    [1.0, 1.0, 2.0, 1.0]
    """
    return _conv_transpose("conv2d_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, 2)


def conv3d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NDHWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose of :func:`conv3d`; ``filters`` is ``[depth, height, width,
    output_channels, in_channels]``.

    >>> import stagecraft as tf
    >>> tf.nn.conv3d_transpose(tf.ones([1, 1, 1, 1, 2]), tf.ones([2, 2, 2, 3, 2]),
    ...                        [1, 2, 2, 2, 3], strides=2).shape
    TensorShape([1, 2, 2, 2, 3])
    """
    return _conv_transpose("conv3d_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, 3)


def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                   padding: Any = "SAME", data_format: str | None = None,
                   dilations: Any = None, name: str | None = None) -> Tensor:
    """The transpose of :func:`convolution` (N = 1, 2 or 3 from ``output_shape``'s length).

    >>> import stagecraft as tf
    >>> tf.nn.conv_transpose(tf.ones([1, 3, 2]), tf.ones([3, 4, 2]), [1, 3, 4], 1).shape
    TensorShape([1, 3, 4])
    """
    r = len(_static_shape("conv_transpose", output_shape)) - 2
    if r not in (1, 2, 3):
        raise _err("conv_transpose", f"output_shape must have 3, 4 or 5 entries, got "
                                     f"{output_shape!r}.")
    return _conv_transpose("conv_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, r)


# ---------------------------------------------------------------------- depthwise & co.

def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                     data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """Convolves each input channel with its own ``channel_multiplier`` filters:
    ``filter [height, width, in_channels, channel_multiplier]``; output channel
    ``c * channel_multiplier + m`` comes from input channel ``c``.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(8.), [1, 2, 2, 2])
    >>> tf.nn.depthwise_conv2d(x, tf.ones([2, 2, 2, 1]), [1, 1, 1, 1], "VALID").numpy().ravel()
    array([12., 16.], dtype=float32)
    """
    op = "depthwise_conv2d"
    first = _channels_first(op, data_format, 2)
    x = convert_to_tensor(input)
    w = _filters(op, filter, x, 2)
    kh, kw, c, mult = w.shape.as_list()
    channels = x.shape[1 if first else -1] if x.shape.rank == 4 else None
    if channels is not None and c is not None and channels != c:
        raise _err(op, f"the filter's in_channels (dimension 2 of {w.shape}) is {c} but the "
                       f"input has {channels} channels (shape {x.shape}); they must be equal.")
    w = _a.reshape(w, [kh, kw, 1, c * mult])
    return _conv(op, x, w, strides, padding, data_format, dilations, 2)


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any,  # noqa: A002
                     strides: Any, padding: Any, data_format: str | None = None,
                     dilations: Any = None, name: str | None = None) -> Tensor:
    """A depthwise convolution followed by a 1x1 convolution with ``pointwise_filter
    [1, 1, in_channels * channel_multiplier, out_channels]``.

    >>> import stagecraft as tf
    >>> tf.nn.separable_conv2d(tf.ones([1, 3, 3, 2]), tf.ones([3, 3, 2, 2]),
    ...                        tf.ones([1, 1, 4, 5]), [1, 1, 1, 1], "SAME").shape
    TensorShape([1, 3, 3, 5])
    """
    op = "separable_conv2d"
    p = pointwise_filter if isinstance(pointwise_filter, Tensor) else \
        convert_to_tensor(pointwise_filter)
    if p.shape.rank != 4 or p.shape[0] != 1 or p.shape[1] != 1:
        raise _err(op, f"pointwise_filter must have shape [1, 1, in_channels * "
                       f"channel_multiplier, out_channels], got {p.shape}.")
    y = depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations)
    return _conv(op, y, p, 1, "VALID", data_format, None, 2)


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str,
                  name: str | None = None) -> Tensor:
    """2-D convolution with holes: ``conv2d`` with ``dilations=rate`` and stride 1 (NHWC).

    >>> import stagecraft as tf
    >>> tf.nn.atrous_conv2d(tf.ones([1, 5, 5, 1]), tf.ones([2, 2, 1, 1]), 2, "VALID").shape
    TensorShape([1, 3, 3, 1])
    """
    if not isinstance(rate, (int, np.integer)) or rate < 1:
        raise ValueError(f"atrous_conv2d: rate must be a positive int, got {rate!r}.")
    return _conv("atrous_conv2d", value, filters, 1, padding, "NHWC", int(rate), 2)


def atrous_conv2d_transpose(value: Any, filters: Any, output_shape: Any, rate: int,
                            padding: str, name: str | None = None) -> Tensor:
    """The transpose of :func:`atrous_conv2d`: ``conv2d_transpose`` with ``dilations=rate``
    and stride 1; ``filters`` is ``[height, width, out_channels, in_channels]``.

    >>> import stagecraft as tf
    >>> tf.nn.atrous_conv2d_transpose(tf.ones([1, 3, 3, 1]), tf.ones([2, 2, 1, 1]),
    ...                               [1, 5, 5, 1], 2, "VALID").shape
    TensorShape([1, 5, 5, 1])
    """
    if not isinstance(rate, (int, np.integer)) or rate < 1:
        raise ValueError(f"atrous_conv2d_transpose: rate must be a positive int, got {rate!r}.")
    return _conv_transpose("atrous_conv2d_transpose", value, filters, output_shape, 1, padding,
                           "NHWC", int(rate), 2)


def _depthwise_geometry(op: str, sizes: list, k: list, strides: Any, padding: Any,
                        dilations: Any, first: bool) -> dict:
    """The conv attributes of a depthwise convolution of an NHWC input of ``sizes`` with a
    ``[kh, kw, C, multiplier]`` filter of shape ``k``."""
    s = _per_dim(op, "strides", strides, 2, first)
    d = _per_dim(op, "dilations", dilations, 2, first)
    return dict(strides=s, dilations=d, padding=_padding(op, padding, sizes[1:3], k[:2], s, d,
                                                         first), groups=int(k[2]))


def depthwise_conv2d_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                    strides: Any, padding: Any, data_format: str = "NHWC",
                                    dilations: Any = None, name: str | None = None) -> Tensor:
    """The gradient of :func:`depthwise_conv2d` with respect to its input, whose shape is
    ``input_sizes``, given the output's gradient ``out_backprop``.

    >>> import stagecraft as tf
    >>> dx = tf.nn.depthwise_conv2d_backprop_input([1, 3, 3, 2], tf.ones([2, 2, 2, 1]),
    ...                                            tf.ones([1, 2, 2, 2]), [1, 1, 1, 1], "VALID")
    >>> dx[0, :, :, 0].numpy().tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    op = "depthwise_conv2d_backprop_input"
    first = _channels_first(op, data_format, 2)
    sizes = _static_shape(op, input_sizes)
    if len(sizes) != 4:
        raise _err(op, f"input_sizes must have 4 entries, got {sizes}.")
    if first:
        sizes = [sizes[0], sizes[2], sizes[3], sizes[1]]
    dy, _ = _input(op, out_backprop, 2, first)
    w = _filters(op, filter, dy, 2)
    k = w.shape.as_list()
    if k[2] != sizes[3]:
        raise _err(op, f"the filter's in_channels (dimension 2 of {w.shape}) is {k[2]} but "
                       f"input_sizes {sizes} has {sizes[3]} channels; they must be equal.")
    conv = _depthwise_geometry(op, sizes, k, strides, padding, dilations, first)
    dx = bind(OPS["conv_backprop_input"], _a.reshape(w, [k[0], k[1], 1, k[2] * k[3]]), dy,
              input_shape=(None, *sizes[1:]), **conv)
    return _output(dx, 2, first, None)


def depthwise_conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                     strides: Any, padding: Any, data_format: str = "NHWC",
                                     dilations: Any = None, name: str | None = None) -> Tensor:
    """The gradient of :func:`depthwise_conv2d` with respect to its filter, whose shape is
    ``filter_sizes`` (``[height, width, in_channels, channel_multiplier]``), given the output's
    gradient ``out_backprop``.

    >>> import stagecraft as tf
    >>> dw = tf.nn.depthwise_conv2d_backprop_filter(tf.ones([1, 3, 3, 2]), [2, 2, 2, 1],
    ...                                             tf.ones([1, 2, 2, 2]), [1, 1, 1, 1], "VALID")
    >>> dw.numpy().ravel().tolist()
    [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    """
    op = "depthwise_conv2d_backprop_filter"
    first = _channels_first(op, data_format, 2)
    x, _ = _input(op, input, 2, first)
    dy, _ = _input(op, out_backprop, 2, first)
    k = _static_shape(op, filter_sizes)
    if len(k) != 4 or None in k or k[2] != x.shape[-1]:
        raise _err(op, f"filter_sizes must be [height, width, in_channels, "
                       f"channel_multiplier] with in_channels = the input's {x.shape[-1]} "
                       f"channels, got {k}.")
    conv = _depthwise_geometry(op, x.shape.as_list(), k, strides, padding, dilations, first)
    dw = bind(OPS["conv_backprop_filter"], x, dy, filter_shape=(k[0], k[1], 1, k[2] * k[3]),
              **conv)
    return _a.reshape(dw, k)


__all__ = ["conv1d", "conv2d", "conv3d", "convolution", "conv1d_transpose",
           "conv2d_transpose", "conv3d_transpose", "conv_transpose", "depthwise_conv2d",
           "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
           "separable_conv2d", "atrous_conv2d", "atrous_conv2d_transpose"]
