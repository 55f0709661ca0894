"""Rearranging blocks between space, depth and batch: ``tf.nn.depth_to_space`` /
``space_to_depth`` and ``tf.space_to_batch(_nd)`` / ``tf.batch_to_space(_nd)`` (also
``tf.nn.space_to_batch``), as TensorFlow lays them out. Each is a reshape, a transpose and a
reshape (with a pad or a crop for the batch forms), so gradients come from those ops; the block
sizes and the spatial dimensions must be known when traced, the batch may not be."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops.manip_ops import pad

__all__ = ["depth_to_space", "space_to_depth", "space_to_batch", "space_to_batch_nd",
           "batch_to_space", "batch_to_space_nd"]


def _ints(value: Any, what: str, name: str) -> list[int]:
    if isinstance(value, Tensor):
        try:
            value = value.numpy()
        except Exception:   # a symbolic tensor: the result's shape depends on it
            raise ValueError(f"{what}: {name} must be known when the function is traced, got a "
                             f"symbolic tensor.") from None
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _nhwc(x: Tensor, data_format: str, what: str) -> tuple[int, int, int]:
    if data_format != "NHWC":
        raise ValueError(f"{what}: only data_format='NHWC' is supported, got {data_format!r}; "
                         f"transpose NCHW input to NHWC first.")
    dims = x.shape.as_list()
    if len(dims) != 4 or None in dims[1:]:
        raise ValueError(f"{what}: input must be 4-D [batch, height, width, depth] with known "
                         f"height, width and depth, got shape {x.shape}.")
    return dims[1], dims[2], dims[3]


def _batch(x: Tensor) -> Any:
    n = x.shape[0]
    return -1 if n is None else n


def depth_to_space(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Moves depth into ``block_size x block_size`` spatial blocks: [N, H, W, C] becomes
    [N, H * b, W * b, C / b**2], ``out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C' + c]``.

    >>> import stagecraft as tf
    >>> tf.nn.depth_to_space(tf.reshape(tf.range(4), [1, 1, 1, 4]), 2)[0, ..., 0].numpy()
    array([[0, 1],
           [2, 3]], dtype=int32)
    """
    what = "tf.nn.depth_to_space"
    x = convert_to_tensor(input)
    h, w, c = _nhwc(x, data_format, what)
    b = int(block_size)
    if b < 2 or c % (b * b):
        raise ValueError(f"{what}: block_size must be >= 2 and its square must divide the depth "
                         f"{c}, got block_size={block_size}.")
    out_c = c // (b * b)
    y = _a.reshape(x, [_batch(x), h, w, b, b, out_c])
    y = _a.transpose(y, [0, 1, 3, 2, 4, 5])
    return _a.reshape(y, [_batch(x), h * b, w * b, out_c])


def space_to_depth(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Moves ``block_size x block_size`` spatial blocks into depth (the inverse of
    ``depth_to_space``): [N, H, W, C] becomes [N, H / b, W / b, C * b**2].

    >>> import stagecraft as tf
    >>> tf.nn.space_to_depth(tf.reshape(tf.range(4), [1, 2, 2, 1]), 2).numpy().tolist()
    [[[[0, 1, 2, 3]]]]
    """
    what = "tf.nn.space_to_depth"
    x = convert_to_tensor(input)
    h, w, c = _nhwc(x, data_format, what)
    b = int(block_size)
    if b < 2 or h % b or w % b:
        raise ValueError(f"{what}: block_size must be >= 2 and divide the height {h} and width "
                         f"{w}, got block_size={block_size}.")
    y = _a.reshape(x, [_batch(x), h // b, b, w // b, b, c])
    y = _a.transpose(y, [0, 1, 3, 2, 4, 5])
    return _a.reshape(y, [_batch(x), h // b, w // b, b * b * c])


def _blocks(x: Tensor, block_shape: Any, pairs: Any, what: str, name: str
            ) -> tuple[list[int], list[list[int]], list]:
    blocks = _ints(block_shape, what, "block_shape")
    m = len(blocks)
    amounts = _ints(pairs, what, name)
    if len(amounts) != 2 * m or any(v < 0 for v in amounts) or any(v < 1 for v in blocks):
        raise ValueError(f"{what}: block_shape must hold positive sizes and {name} one "
                         f"non-negative [start, end] pair per block dimension ({m}), got "
                         f"block_shape={blocks}, {name}={amounts}.")
    dims = x.shape.as_list()
    if len(dims) < m + 1 or None in dims[1:m + 1]:
        raise ValueError(f"{what}: input needs a batch dimension and {m} known spatial "
                         f"dimension(s) for block_shape {blocks}, got shape {x.shape}.")
    return blocks, [amounts[2 * i:2 * i + 2] for i in range(m)], dims


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                      name: str | None = None) -> Tensor:
    """Pads the spatial dimensions (1 to M, M = len(block_shape)) by ``paddings`` and moves
    blocks of ``block_shape`` into the batch: [B, s1, .., sM, rest] becomes
    [B * prod(block_shape), padded s1 / b1, .., padded sM / bM, rest]; the block offset is the
    outer part of the new batch index.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(1, 5), [1, 2, 2, 1])
    >>> tf.space_to_batch(x, [2, 2], [[0, 0], [0, 0]])[:, 0, 0, 0].numpy().tolist()
    [1, 2, 3, 4]
    """
    what = "tf.space_to_batch"
    x = convert_to_tensor(input)
    blocks, pads, dims = _blocks(x, block_shape, paddings, what, "paddings")
    m = len(blocks)
    padded = [s + p[0] + p[1] for s, p in zip(dims[1:m + 1], pads)]
    if any(s % b for s, b in zip(padded, blocks)):
        raise ValueError(f"{what}: the padded spatial dimensions {padded} must be multiples of "
                         f"block_shape {blocks}.")
    rest = dims[m + 1:]
    if None in rest:
        raise ValueError(f"{what}: the dimensions after the spatial ones must be known, got "
                         f"shape {x.shape}.")
    y = pad(x, [[0, 0]] + pads + [[0, 0]] * len(rest))
    split = [_batch(x)]
    for s, b in zip(padded, blocks):
        split += [s // b, b]
    y = _a.reshape(y, split + rest)
    # [B, s1/b1, b1, ..] -> [b1, .., bM, B, s1/b1, .., rest]
    perm = ([2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] +
            list(range(1 + 2 * m, 1 + 2 * m + len(rest))))
    y = _a.transpose(y, perm)
    return _a.reshape(y, [-1] + [s // b for s, b in zip(padded, blocks)] + rest)


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any,  # noqa: A002
                      name: str | None = None) -> Tensor:
    """The inverse of ``space_to_batch_nd``: blocks of the batch move back into the spatial
    dimensions, which are then cropped by ``crops``.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(1, 5), [4, 1, 1, 1])
    >>> tf.batch_to_space(x, [2, 2], [[0, 0], [0, 0]])[0, ..., 0].numpy().tolist()
    [[1, 2], [3, 4]]
    """
    what = "tf.batch_to_space"
    x = convert_to_tensor(input)
    blocks, crop, dims = _blocks(x, block_shape, crops, what, "crops")
    m = len(blocks)
    rest = dims[m + 1:]
    if None in rest:
        raise ValueError(f"{what}: the dimensions after the spatial ones must be known, got "
                         f"shape {x.shape}.")
    prod = int(np.prod(blocks))
    if dims[0] is not None and dims[0] % prod:
        raise ValueError(f"{what}: the batch {dims[0]} must be a multiple of the product of "
                         f"block_shape {blocks} ({prod}).")
    spatial = dims[1:m + 1]
    y = _a.reshape(x, blocks + [-1] + spatial + rest)
    # [b1, .., bM, B, s1, .., sM, rest] -> [B, s1, b1, .., sM, bM, rest]
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = _a.reshape(_a.transpose(y, perm), [-1] + [s * b for s, b in zip(spatial, blocks)] + rest)
    full = [s * b for s, b in zip(spatial, blocks)]
    if any(c[0] + c[1] > f for c, f in zip(crop, full)):
        raise ValueError(f"{what}: crops {crop} remove more than the spatial dimensions {full}.")
    index = (slice(None),) + tuple(slice(c[0], f - c[1]) for c, f in zip(crop, full))
    return y[index]


def space_to_batch(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                   name: str | None = None) -> Tensor:
    """TensorFlow 2's ``tf.space_to_batch`` / ``tf.nn.space_to_batch``: ``space_to_batch_nd``.

    >>> import stagecraft as tf
    >>> tf.space_to_batch(tf.zeros([1, 4, 4, 3]), [2, 2], [[0, 0], [0, 0]]).shape
    TensorShape([4, 2, 2, 3])
    """
    return space_to_batch_nd(input, block_shape, paddings, name)


def batch_to_space(input: Any, block_shape: Any, crops: Any,  # noqa: A002
                   name: str | None = None) -> Tensor:
    """TensorFlow 2's ``tf.batch_to_space``: ``batch_to_space_nd``.

    >>> import stagecraft as tf
    >>> tf.batch_to_space(tf.zeros([4, 2, 2, 3]), [2, 2], [[0, 0], [0, 1]]).shape
    TensorShape([1, 4, 3, 3])
    """
    return batch_to_space_nd(input, block_shape, crops, name)
