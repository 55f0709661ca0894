"""``tf.image.draw_bounding_boxes``: one-pixel box outlines painted into float images, each
box's lines chosen by comparing the pixel grid with the box's edge rows and columns (so box
coordinates may be tensors known only at run time)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import as_image, dims, static_hw


def draw_bounding_boxes(images: Any, boxes: Any, colors: Any, name: str | None = None) -> Tensor:
    """Draws the outline of each box ([batch, num_boxes, 4] normalized [y_min, x_min, y_max,
    x_max]; 0 and 1 are the first and last pixel) on float images [batch, height, width,
    depth] (depth 1, 3 or 4). Box i takes ``colors[i % len(colors)]`` (RGBA rows, the first
    ``depth`` channels used; grayscale images draw 1). Edges outside the image are not drawn,
    nor are inverted boxes; later boxes paint over earlier ones.

    >>> import stagecraft as tf
    >>> out = tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 1]), [[[0.0, 0.0, 0.7, 0.7]]],
    ...                                    [[1.0, 0.0, 0.0, 1.0]])
    >>> out[0, ..., 0].numpy().tolist()
    [[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """
    api = "tf.image.draw_bounding_boxes"
    x = as_image(images, api, ranks=(4,), what="images")
    if not x.dtype.is_floating:
        raise TypeError(f"{api}: images must be float32 or float64, got {x.dtype.name}; "
                        f"convert them with tf.image.convert_image_dtype first.")
    depth = dims(x)[3]
    if depth not in (1, 3, 4):
        raise ValueError(f"{api}: images must have 1, 3 or 4 channels, got shape {x.shape}.")
    b = _m.cast(convert_to_tensor(boxes), "float32")
    if b.shape.rank != 3 or b.shape.as_list()[2] != 4 or b.shape.as_list()[1] is None:
        raise ValueError(f"{api}: boxes must have shape [batch, num_boxes, 4] with a known "
                         f"num_boxes, got {b.shape}.")
    table = _m.cast(convert_to_tensor(colors), x.dtype)
    if table.shape.rank != 2 or (table.shape.as_list()[1] or 0) < depth or not table.shape[0]:
        raise ValueError(f"{api}: colors must be [num_colors, channels] with at least {depth} "
                         f"channels, got shape {table.shape}.")
    h, w = static_hw(x, api)
    table = table[:, :depth]
    if depth == 1:  # grayscale images draw white boxes
        table = _a.ones_like(table)
    rows = _a.reshape(_a.range(h, dtype="int32"), [1, h, 1])
    cols = _a.reshape(_a.range(w, dtype="int32"), [1, 1, w])

    def edge(t: Tensor, size: int) -> Tensor:  # [batch, 1, 1], truncated toward zero as TF
        return _a.reshape(_m.cast(_m.multiply(t, float(size - 1)), "int32"), [-1, 1, 1])

    out = x
    for i in range(b.shape.as_list()[1]):
        top, left, bottom, right = (edge(b[:, i, k], h if k % 2 == 0 else w) for k in range(4))
        shown = _m.logical_and(
            _m.logical_and(_m.less_equal(top, bottom), _m.less_equal(left, right)),
            _m.logical_and(_m.logical_and(_m.less(top, h), _m.greater_equal(bottom, 0)),
                           _m.logical_and(_m.less(left, w), _m.greater_equal(right, 0))))
        along_rows = _m.logical_and(_m.greater_equal(rows, top), _m.less_equal(rows, bottom))
        along_cols = _m.logical_and(_m.greater_equal(cols, left), _m.less_equal(cols, right))
        lines = _m.logical_or(
            _m.logical_and(_m.logical_or(_m.equal(rows, top), _m.equal(rows, bottom)), along_cols),
            _m.logical_and(_m.logical_or(_m.equal(cols, left), _m.equal(cols, right)), along_rows))
        mask = _a.expand_dims(_m.logical_and(lines, shown), 3)
        color = _a.reshape(table[i % table.shape.as_list()[0]], [1, 1, 1, depth])
        out = _m.where(mask, color + _a.zeros_like(out), out)
    return out


__all__ = ["draw_bounding_boxes"]
