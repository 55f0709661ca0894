"""``tf.image``'s geometric ops: flips, rotations by 90 degrees, transposes, crops, pads and
patch extraction. Each works on one image [height, width, channels] or a batch
[batch, height, width, channels], keeps the dtype, and is differentiable (slices, reverses,
pads and gathers)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import as_image, dims, static_hw, static_int
from stagecraft.ops.manip_ops import pad, reverse


def flip_left_right(image: Any) -> Tensor:
    """Mirrors the image(s) horizontally (reverses the width axis).

    >>> import stagecraft as tf
    >>> tf.image.flip_left_right([[[1], [2], [3]]]).numpy()[..., 0].tolist()
    [[3, 2, 1]]
    """
    return reverse(as_image(image, "tf.image.flip_left_right"), [-2])


def flip_up_down(image: Any) -> Tensor:
    """Mirrors the image(s) vertically (reverses the height axis).

    >>> import stagecraft as tf
    >>> tf.image.flip_up_down([[[1]], [[2]]]).numpy()[..., 0].tolist()
    [[2], [1]]
    """
    return reverse(as_image(image, "tf.image.flip_up_down"), [-3])


def transpose(image: Any, name: str | None = None) -> Tensor:
    """Swaps the height and width axes.

    >>> import stagecraft as tf
    >>> tf.image.transpose(tf.zeros([2, 3, 1])).shape
    TensorShape([3, 2, 1])
    """
    x = as_image(image, "tf.image.transpose")
    return _a.transpose(x, [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3])


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """Rotates the image(s) counter-clockwise by ``k`` quarter turns (``k`` may be negative;
    a ``k`` known only at run time needs square images).

    >>> import stagecraft as tf
    >>> tf.image.rot90([[[1], [2]], [[3], [4]]]).numpy()[..., 0].tolist()
    [[2, 4], [1, 3]]
    """
    x = as_image(image, "tf.image.rot90")
    known = _a.get_static_value(k) if isinstance(k, Tensor) else k
    if known is not None:
        return _rot90(x, int(known) % 4)
    h, w = dims(x)[-3], dims(x)[-2]
    if h is None or h != w:
        raise ValueError(f"tf.image.rot90: with k known only when the function runs the image "
                         f"must be square with a known size, got shape {x.shape}; pass k as a "
                         f"Python int to rotate non-square images.")
    k = _m.floormod(_m.cast(k, "int32"), 4)
    out = x
    for turns in (1, 2, 3):
        out = _m.where(_m.equal(k, turns), _rot90(x, turns), out)
    return out


def _rot90(x: Tensor, k: int) -> Tensor:
    hw = [0, 1] if x.shape.rank == 3 else [1, 2]
    swap = [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3]
    if k == 1:
        return _a.transpose(reverse(x, [hw[1]]), swap)
    if k == 2:
        return reverse(x, hw)
    if k == 3:
        return reverse(_a.transpose(x, swap), [hw[1]])
    return x


def take(x: Tensor, axis: int, offset: Any, size: int) -> Tensor:
    """``size`` entries of ``x`` along ``axis`` from ``offset`` (an int, or a scalar int
    tensor known only at run time: then a gather, which keeps the static size)."""
    known = _a.get_static_value(offset) if isinstance(offset, Tensor) else offset
    if known is not None:
        index = [slice(None)] * x.shape.rank
        index[axis] = slice(int(known), int(known) + size)
        return x[tuple(index)]
    rows = _m.add(_m.cast(offset, "int32"), _a.range(size, dtype="int32"))
    return _a.gather(x, rows, axis=axis % x.shape.rank)


def _check_nonneg(api: str, **values: int) -> None:
    for what, v in values.items():
        if v < 0:
            raise ValueError(f"{api}: {what} must be >= 0, got {v}.")


def _check_positive(api: str, **values: int) -> None:
    for what, v in values.items():
        if v <= 0:
            raise ValueError(f"{api}: {what} must be > 0, got {v}.")


def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any,
                         target_height: Any, target_width: Any) -> Tensor:
    """The ``target_height`` x ``target_width`` window whose top-left corner is at
    (``offset_height``, ``offset_width``). Offsets may be run-time scalars; the target size
    must be known when traced.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(9), [3, 3, 1])
    >>> tf.image.crop_to_bounding_box(x, 1, 0, 2, 2).numpy()[..., 0].tolist()
    [[3, 4], [6, 7]]
    """
    api = "tf.image.crop_to_bounding_box"
    x = as_image(image, api)
    th = static_int(target_height, api, "target_height")
    tw = static_int(target_width, api, "target_width")
    _check_positive(api, target_height=th, target_width=tw)
    h, w = dims(x)[-3], dims(x)[-2]
    oh = _a.get_static_value(offset_height) if isinstance(offset_height, Tensor) else offset_height
    ow = _a.get_static_value(offset_width) if isinstance(offset_width, Tensor) else offset_width
    for what, off, size, target in (("height", oh, h, th), ("width", ow, w, tw)):
        if off is not None:
            _check_nonneg(api, **{f"offset_{what}": int(off)})
        if off is not None and size is not None and size < int(off) + target:
            raise ValueError(f"{api}: the image's {what} ({size}) must be >= offset_{what} + "
                             f"target_{what} ({int(off)} + {target}).")
    out = take(x, -3, offset_height if oh is None else int(oh), th)
    return take(out, -2, offset_width if ow is None else int(ow), tw)


def pad_to_bounding_box(image: Any, offset_height: Any, offset_width: Any,
                        target_height: Any, target_width: Any) -> Tensor:
    """Pads with zeros to ``target_height`` x ``target_width``, the image's top-left corner
    landing at (``offset_height``, ``offset_width``).

    >>> import stagecraft as tf
    >>> tf.image.pad_to_bounding_box(tf.ones([1, 1, 1]), 1, 0, 2, 2).numpy()[..., 0].tolist()
    [[0.0, 0.0], [1.0, 0.0]]
    """
    api = "tf.image.pad_to_bounding_box"
    x = as_image(image, api)
    oh = static_int(offset_height, api, "offset_height")
    ow = static_int(offset_width, api, "offset_width")
    th = static_int(target_height, api, "target_height")
    tw = static_int(target_width, api, "target_width")
    _check_nonneg(api, offset_height=oh, offset_width=ow)
    h, w = static_hw(x, api)
    for what, off, size, target in (("height", oh, h, th), ("width", ow, w, tw)):
        if size > target - off:
            raise ValueError(f"{api}: the image's {what} ({size}) must be <= target_{what} - "
                             f"offset_{what} ({target} - {off}).")
    paddings = [[oh, th - oh - h], [ow, tw - ow - w], [0, 0]]
    return pad(x, paddings if x.shape.rank == 3 else [[0, 0]] + paddings)


def resize_with_crop_or_pad(image: Any, target_height: Any, target_width: Any) -> Tensor:
    """Centers the image in a ``target_height`` x ``target_width`` frame: crops evenly where
    it is larger, pads with zeros evenly where it is smaller.

    >>> import stagecraft as tf
    >>> tf.image.resize_with_crop_or_pad(tf.ones([4, 1, 1]), 2, 3).numpy()[..., 0].tolist()
    [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    """
    api = "tf.image.resize_with_crop_or_pad"
    x = as_image(image, api)
    th = static_int(target_height, api, "target_height")
    tw = static_int(target_width, api, "target_width")
    _check_positive(api, target_height=th, target_width=tw)
    h, w = static_hw(x, api)
    dh, dw = th - h, tw - w
    cropped = crop_to_bounding_box(x, max(-dh // 2, 0), max(-dw // 2, 0), min(th, h), min(tw, w))
    return pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), th, tw)


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` (in (0, 1]) of the image along height and width.

    >>> import stagecraft as tf
    >>> tf.image.central_crop(tf.reshape(tf.range(16), [4, 4, 1]), 0.5).numpy()[..., 0].tolist()
    [[5, 6], [9, 10]]
    """
    api = "tf.image.central_crop"
    x = as_image(image, api)
    f = float(central_fraction)
    if f <= 0.0 or f > 1.0:
        raise ValueError(f"{api}: central_fraction must be within (0, 1], got {f}.")
    if f == 1.0:
        return x
    h, w = static_hw(x, api)
    top, left = int((h - h * f) / 2), int((w - w * f) / 2)
    return crop_to_bounding_box(x, top, left, h - 2 * top, w - 2 * left)


def _four(api: str, what: str, value: Any) -> tuple[int, int]:
    v = [int(t) for t in np.asarray(value).reshape(-1)]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise ValueError(f"{api}: {what} must be [1, rows, cols, 1], got {v}.")
    if v[1] < 1 or v[2] < 1:
        raise ValueError(f"{api}: {what} must be positive, got {v}.")
    return v[1], v[2]


def patch_rows(size: int, k: int, stride: int, rate: int, padding: str) -> tuple:
    """(rows to read [out, k] into the padded axis, padding before, padding after) of one
    axis of a strided, dilated window sweep with TF's VALID/SAME rules."""
    span = (k - 1) * rate + 1
    if padding == "VALID":
        out, before, after = max(math.ceil((size - span + 1) / stride), 0), 0, 0
    else:
        out = math.ceil(size / stride)
        total = max((out - 1) * stride + span - size, 0)
        before, after = total // 2, total - total // 2
    rows = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * rate
    return rows.astype(np.int32), before, after


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: str,
                    name: str | None = None) -> Tensor:
    """Every ``sizes`` patch of each image, taken every ``strides`` pixels with the patch's
    pixels ``rates`` apart, flattened into the depth axis (row, column, channel order):
    [batch, out_rows, out_cols, rows * cols * channels]. ``padding`` is "VALID" or "SAME"
    (zeros).

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(16), [1, 4, 4, 1])
    >>> p = tf.image.extract_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    >>> p.shape, p[0, 0, 0].numpy().tolist()
    (TensorShape([1, 2, 2, 4]), [0, 1, 4, 5])
    """
    api = "tf.image.extract_patches"
    x = as_image(images, api, ranks=(4,), what="images")
    kr, kc = _four(api, "sizes", sizes)
    sr, sc = _four(api, "strides", strides)
    rr, rc = _four(api, "rates", rates)
    pad_mode = str(padding).upper()
    if pad_mode not in ("VALID", "SAME"):
        raise ValueError(f"{api}: padding must be 'VALID' or 'SAME', got {padding!r}.")
    h, w = static_hw(x, api)
    c = dims(x)[3]
    rows, rb, ra = patch_rows(h, kr, sr, rr, pad_mode)
    cols, cb, ca = patch_rows(w, kc, sc, rc, pad_mode)
    if rb or ra or cb or ca:
        x = pad(x, [[0, 0], [rb, ra], [cb, ca], [0, 0]])
    y = _a.gather(x, convert_to_tensor(rows), axis=1)  # [n, out_r, kr, w, c]
    y = _a.gather(y, convert_to_tensor(cols), axis=3)  # [n, out_r, kr, out_c, kc, c]
    y = _a.transpose(y, [0, 1, 3, 2, 4, 5])
    depth = -1 if c is None else kr * kc * c
    n = dims(x)[0]
    return _a.reshape(y, [-1 if n is None else n, rows.shape[0], cols.shape[0], depth])


__all__ = ["flip_left_right", "flip_up_down", "transpose", "rot90", "crop_to_bounding_box",
           "pad_to_bounding_box", "resize_with_crop_or_pad", "central_crop", "extract_patches"]
