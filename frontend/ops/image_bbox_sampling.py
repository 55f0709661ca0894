"""``tf.image.sample_distorted_bounding_box`` and its stateless twin: a random crop window with
an aspect ratio and area in given ranges that covers at least ``min_object_covered`` of one
of the given boxes (Inception-style augmentation). TF's rejection sampling is run for all
``max_attempts`` at once as tensors (so it also works inside ``tf.function`` and ``tf.data``,
with image sizes known only at run time); the first accepted attempt wins, the whole image is
the fallback."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import random_ops as _r
from stagecraft.state.random_generator import stateless_uniform


def _pair(api: str, what: str, value: Sequence[float] | None, default: tuple) -> tuple:
    lo, hi = (default if value is None else [float(v) for v in value])
    if not 0 < lo <= hi:
        raise ValueError(f"{api}: {what} must be [min, max] with 0 < min <= max, got "
                         f"{[lo, hi]}.")
    return lo, hi


def _sample(api: str, image_size: Any, bounding_boxes: Any, uniform: Tensor,
            min_object_covered: Any, aspect_ratio_range: Any, area_range: Any,
            use_image_if_no_bounding_boxes: bool | None) -> tuple[Tensor, Tensor, Tensor]:
    """The window from ``uniform`` [attempts, 4] draws in [0, 1)."""
    size = convert_to_tensor(image_size)
    if size.shape.as_list() != [3] or not size.dtype.is_integer:
        raise ValueError(f"{api}: image_size must be [height, width, channels] integers, got "
                         f"{size.dtype.name} of shape {size.shape}.")
    boxes = _m.cast(convert_to_tensor(bounding_boxes), "float32")
    if boxes.shape.rank != 3 or boxes.shape.as_list()[2] != 4:
        raise ValueError(f"{api}: bounding_boxes must have shape [batch, N, 4], got "
                         f"{boxes.shape}.")
    ar_lo, ar_hi = _pair(api, "aspect_ratio_range", aspect_ratio_range, (0.75, 1.33))
    area_lo, area_hi = _pair(api, "area_range", area_range, (0.05, 1.0))
    boxes = _a.reshape(boxes, [-1, 4])
    known = _a.get_static_value(boxes)
    if boxes.shape.as_list()[0] == 0:
        if not use_image_if_no_bounding_boxes:
            raise InvalidArgumentError(f"{api}: no bounding boxes given; pass some or "
                                       f"use_image_if_no_bounding_boxes=True.")
        boxes = convert_to_tensor(np.array([[0.0, 0.0, 1.0, 1.0]], np.float32))
    elif known is not None and (known.min() < 0 or known.max() > 1):
        raise InvalidArgumentError(f"{api}: all bounding box coordinates must be in [0.0, 1.0], "
                                   f"got {known.tolist()}.")

    f32 = _m.cast(size, "float32")
    height, width = f32[0], f32[1]
    area = _m.multiply(height, width)
    ratio = _m.add(_m.multiply(uniform[:, 0], ar_hi - ar_lo), ar_lo)            # [attempts]
    min_area, max_area = _m.multiply(area, area_lo), _m.multiply(area, area_hi)
    lo_h = _m.round(_m.sqrt(_m.divide(min_area, ratio)))
    hi_h = _m.round(_m.sqrt(_m.divide(max_area, ratio)))
    # the tallest crop whose rounded width still fits (TF's correction, then its off-by-one)
    fit = _m.floor(_m.divide(_m.add(width, 0.5 - 1e-7), ratio))
    fit = _m.where(_m.greater(_m.round(_m.multiply(fit, ratio)), width), _m.subtract(fit, 1.0),
                   fit)
    hi_h = _m.where(_m.greater(_m.round(_m.multiply(hi_h, ratio)), width), fit, hi_h)
    hi_h = _m.minimum(hi_h, height)
    lo_h = _m.minimum(lo_h, hi_h)
    h = _m.add(lo_h, _m.floor(_m.multiply(uniform[:, 1], _m.add(_m.subtract(hi_h, lo_h), 1.0))))

    def sized(t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        w = _m.round(_m.multiply(t, ratio))
        return t, w, _m.multiply(t, w)
    h, w, a = sized(h)
    h, w, a = sized(_m.where(_m.less(a, min_area), _m.add(h, 1.0), h))
    h, w, a = sized(_m.where(_m.greater(a, max_area), _m.subtract(h, 1.0), h))
    ok = _m.logical_and(_m.logical_and(_m.greater_equal(a, min_area),
                                       _m.less_equal(a, max_area)),
                        _m.logical_and(_m.logical_and(_m.less_equal(w, width),
                                                      _m.less_equal(h, height)),
                                       _m.logical_and(_m.greater(w, 0.0), _m.greater(h, 0.0))))
    y = _m.floor(_m.multiply(uniform[:, 2], _m.subtract(height, h)))
    x = _m.floor(_m.multiply(uniform[:, 3], _m.subtract(width, w)))

    # boxes in whole pixels (truncated, as TF) and the share of each that the crop covers
    px = _m.floor(_m.multiply(boxes, _a.stack([height, width, height, width])))
    by0, bx0, by1, bx1 = (_a.expand_dims(c, 0) for c in _a.unstack(px, num=4, axis=1))
    cy0, cx0 = _a.expand_dims(y, 1), _a.expand_dims(x, 1)
    cy1, cx1 = _a.expand_dims(_m.add(y, h), 1), _a.expand_dims(_m.add(x, w), 1)
    zero = _a.zeros([], "float32")
    inter = _m.multiply(_m.maximum(_m.subtract(_m.minimum(cy1, by1), _m.maximum(cy0, by0)), zero),
                        _m.maximum(_m.subtract(_m.minimum(cx1, bx1), _m.maximum(cx0, bx0)), zero))
    box_area = _m.multiply(_m.subtract(by1, by0), _m.subtract(bx1, bx0))
    covered = _m.logical_and(_m.greater_equal(box_area, 1.0), _m.greater_equal(
        _m.divide(inter, _m.maximum(box_area, 1.0)), _m.cast(min_object_covered, "float32")))
    ok = _m.logical_and(_m.logical_and(ok, _m.greater_equal(_m.multiply(h, w), 1.0)),
                        _m.reduce_any(covered, axis=1))
    first = _m.argmax(_m.cast(ok, "int32"), output_type="int32")
    found = _m.reduce_any(ok)

    def pick(t: Tensor, whole: Tensor) -> Tensor:
        return _m.where(found, _a.gather(t, first), whole)
    y, x = pick(y, zero), pick(x, zero)
    h, w = pick(h, height), pick(w, width)
    begin = _m.cast(_a.stack([y, x, zero]), size.dtype)
    extent = _m.cast(_a.stack([h, w, -_a.ones([], "float32")]), size.dtype)
    window = _a.stack([_m.divide(y, height), _m.divide(x, width), _m.divide(_m.add(y, h), height),
                       _m.divide(_m.add(x, w), width)])
    return begin, extent, _a.reshape(window, [1, 1, 4])


def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: int = 0,
                                  min_object_covered: Any = 0.1,
                                  aspect_ratio_range: Sequence[float] | None = None,
                                  area_range: Sequence[float] | None = None,
                                  max_attempts: int | None = None,
                                  use_image_if_no_bounding_boxes: bool | None = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """A random crop for augmentation: (begin, size) for ``tf.slice`` (size's channel entry is
    -1) and the window as a normalized box [1, 1, 4]. The crop's aspect ratio (width/height)
    lies in ``aspect_ratio_range`` (default [0.75, 1.33]), its area fraction in ``area_range``
    (default [0.05, 1]), and it covers at least ``min_object_covered`` of one of
    ``bounding_boxes`` ([batch, N, 4] normalized [y1, x1, y2, x2]); after ``max_attempts``
    (default 100) failed draws the whole image is returned. ``seed=0`` draws unseeded.

    >>> import stagecraft as tf
    >>> begin, size, box = tf.image.sample_distorted_bounding_box(
    ...     [40, 60, 3], [[[0.1, 0.1, 0.9, 0.9]]], seed=4, min_object_covered=0.5)
    >>> crop = tf.slice(tf.zeros([40, 60, 3]), begin, size)
    >>> crop.shape[2], box.shape
    (3, TensorShape([1, 1, 4]))
    """
    api = "tf.image.sample_distorted_bounding_box"
    attempts = 100 if max_attempts is None else int(max_attempts)
    if attempts < 1:
        raise ValueError(f"{api}: max_attempts must be positive, got {attempts}.")
    draws = _r.uniform([attempts, 4], 0.0, 1.0, _dt.float32, seed=None if not seed else seed)
    return _sample(api, image_size, bounding_boxes, draws, min_object_covered,
                   aspect_ratio_range, area_range, use_image_if_no_bounding_boxes)


def stateless_sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: Any,
                                            min_object_covered: Any = 0.1,
                                            aspect_ratio_range: Sequence[float] | None = None,
                                            area_range: Sequence[float] | None = None,
                                            max_attempts: int | None = None,
                                            use_image_if_no_bounding_boxes: bool | None = None,
                                            name: str | None = None
                                            ) -> tuple[Tensor, Tensor, Tensor]:
    """``sample_distorted_bounding_box`` decided by ``seed`` (shape [2] integers) alone.

    >>> import stagecraft as tf
    >>> def sample():
    ...     return tf.image.stateless_sample_distorted_bounding_box(
    ...         [32, 32, 3], tf.zeros([1, 0, 4]), [1, 2], use_image_if_no_bounding_boxes=True)
    >>> sample()[0].numpy().tolist() == sample()[0].numpy().tolist()
    True
    """
    api = "tf.image.stateless_sample_distorted_bounding_box"
    attempts = 100 if max_attempts is None else int(max_attempts)
    if attempts < 1:
        raise ValueError(f"{api}: max_attempts must be positive, got {attempts}.")
    draws = stateless_uniform([attempts, 4], seed)
    return _sample(api, image_size, bounding_boxes, draws, min_object_covered,
                   aspect_ratio_range, area_range, use_image_if_no_bounding_boxes)


__all__ = ["sample_distorted_bounding_box", "stateless_sample_distorted_bounding_box"]
