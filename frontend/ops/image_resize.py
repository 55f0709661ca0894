"""``tf.image.resize`` and ``resize_with_pad`` with TensorFlow 2's sampling.

Every method is a fixed linear map along the height axis and another along the width axis
(half-pixel centers: output pixel ``i`` samples input coordinate ``(i + 0.5) * in / out -
0.5``). Bilinear and nearest neighbour resample each axis by gathers (two rows and a lerp, or
one row, which also works when the size is known only at run time); the wider kernels are
small matmuls whose matrices are computed here in NumPy from TF's kernel definitions. The
same values eagerly and staged on any backend, differentiable through the gathers and
matmuls. Nearest neighbour keeps the dtype; the other methods return float32, as in TF.
"""
from __future__ import annotations

import enum
import math
from typing import Any, Callable

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import as_image, batched, linear_map, static_hw, unbatched
from stagecraft.ops.image_geometry import pad_to_bounding_box

_F = np.float32


class ResizeMethod(str, enum.Enum):
    """The interpolation methods of ``tf.image.resize`` (their values are TF's strings)."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"

    def __str__(self) -> str:
        return self.value


def _scale(n_in: int, n_out: int) -> np.float32:
    return _F(n_in) / _F(n_out)


def _half_pixel(n_in: int, n_out: int) -> np.ndarray:
    """The input coordinate each output pixel samples, computed in float32 as TF does."""
    return (np.arange(n_out, dtype=_F) + _F(0.5)) * _scale(n_in, n_out) - _F(0.5)


def _matrix(n_in: int, n_out: int, taps: list) -> np.ndarray:
    """The [n_out, n_in] matrix with weight w at (i, idx[i]) for each (idx, w) in taps."""
    m = np.zeros((n_out, n_in), np.float64)
    rows = np.arange(n_out)
    for idx, w in taps:
        np.add.at(m, (rows, idx), w)
    return m


def _keys_table() -> np.ndarray:
    """TF's tabulated Keys cubic (a = -0.5) at 1/1024 steps: [i, 0] the weight at distance
    i/1024, [i, 1] at distance 1 + i/1024."""
    a = _F(-0.5)
    x = np.arange(1025, dtype=_F) / _F(1024)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = x + 1
    far = ((a * far - 5 * a) * far + 8 * a) * far - 4 * a
    return np.stack([near, far], 1).astype(_F)


def bicubic_matrix(n_in: int, n_out: int) -> np.ndarray:
    """Keys cubic convolution over 4 taps; taps outside the image get weight 0 and the rest
    are renormalized to sum to 1 (TF's half-pixel bicubic)."""
    src = _half_pixel(n_in, n_out)
    base = np.floor(src).astype(np.int64)
    offset = np.rint((src - base) * _F(1024)).astype(np.int64)
    table = _keys_table()
    weights = [table[offset, 1], table[offset, 0], table[1024 - offset, 0],
               table[1024 - offset, 1]]
    idx = [base - 1, base, base + 1, base + 2]
    inside = [(i >= 0) & (i < n_in) for i in idx]
    weights = [np.where(ok, w, _F(0)) for ok, w in zip(inside, weights)]
    total = weights[0] + weights[1] + weights[2] + weights[3]
    norm = np.where(np.abs(total) >= 1000 * np.finfo(_F).tiny, _F(1) / total, _F(1))
    return _matrix(n_in, n_out, [(np.clip(i, 0, n_in - 1), (w * norm).astype(np.float64))
                                 for i, w in zip(idx, weights)])


def area_matrix(n_in: int, n_out: int) -> np.ndarray:
    """Each output pixel averages the input span [i * s, (i + 1) * s), s = in / out, pixels
    weighted by how much of them it covers (TF's ``resize_area``, no half-pixel shift)."""
    s = _scale(n_in, n_out)
    m = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        lo, hi = _F(i) * s, _F(i + 1) * s
        for j in range(int(math.floor(lo)), int(math.ceil(hi))):
            cover = min(j + 1, hi) - max(j, lo)
            m[i, min(max(j, 0), n_in - 1)] += float(cover) / float(s)
    return m


def _kernel(method: str) -> tuple[Callable, float]:
    """The scale-and-translate kernels (function of the distance, radius)."""
    def lanczos(r: int) -> Callable:
        def f(x: np.ndarray) -> np.ndarray:
            x = np.abs(x)
            out = r * np.sin(np.pi * x) * np.sin(np.pi * x / r) / np.maximum(np.pi ** 2 * x * x,
                                                                            1e-300)
            return np.where(x > r, 0.0, np.where(x <= 1e-3, 1.0, out))
        return f

    def triangle(x: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, 1.0 - np.abs(x))

    def keys(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        return np.where(x >= 2, 0.0, np.where(x >= 1, ((-0.5 * x + 2.5) * x - 4) * x + 2,
                                              (1.5 * x - 2.5) * x * x + 1))

    def mitchell(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        return np.where(x >= 2, 0.0, np.where(
            x >= 1, (((-7 / 18) * x + 2) * x - 10 / 3) * x + 16 / 9,
            ((7 / 6) * x - 2) * x * x + 8 / 9))

    def gaussian(x: np.ndarray) -> np.ndarray:
        sigma = 0.5
        return np.where(np.abs(x) >= 3 * sigma, 0.0, np.exp(-x * x / (2 * sigma * sigma)))

    return {"bilinear": (triangle, 1.0), "bicubic": (keys, 2.0), "lanczos3": (lanczos(3), 3.0),
            "lanczos5": (lanczos(5), 5.0), "gaussian": (gaussian, 1.5),
            "mitchellcubic": (mitchell, 2.0)}[method]


def scale_translate_matrix(n_in: int, n_out: int, method: str, antialias: bool) -> np.ndarray:
    """TF's ``scale_and_translate`` weights: each output pixel's kernel, stretched by the
    downscaling factor when ``antialias``, sampled at the input pixel centers inside the image
    and normalized to sum to 1."""
    kernel, radius = _kernel(method)
    inv = n_in / n_out
    stretch = max(inv, 1.0) if antialias else 1.0
    m = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        center = (i + 0.5) * inv
        first = max(int(math.ceil(center - radius * stretch - 0.5)), 0)
        last = min(int(math.floor(center + radius * stretch - 0.5)), n_in - 1)
        j = np.arange(first, last + 1)
        w = kernel((j + 0.5 - center) / stretch)
        total = w.sum()
        if abs(total) >= 1000 * np.finfo(np.float32).tiny:
            m[i, first:last + 1] = w / total
    return m


def nearest_rows(n_in: int, n_out: int) -> np.ndarray:
    """The input row each output row copies: floor((i + 0.5) * in / out), clamped."""
    src = np.floor((np.arange(n_out, dtype=_F) + _F(0.5)) * _scale(n_in, n_out))
    return np.clip(src, 0, n_in - 1).astype(np.int32)


_LINEAR = {"bicubic": bicubic_matrix, "area": area_matrix}


def _method(method: Any) -> str:
    name = method.value if isinstance(method, ResizeMethod) else str(method)
    if name not in {m.value for m in ResizeMethod}:
        raise ValueError(f"tf.image.resize: method {method!r} is not one of "
                         f"{[m.value for m in ResizeMethod]} (tf.image.ResizeMethod).")
    return name


def _size(api: str, size: Any) -> tuple[int, int]:
    known = _a.get_static_value(size) if isinstance(size, Tensor) else size
    if known is None:
        raise ValueError(f"{api}: size must be known when the function is traced (Python ints "
                         f"or a tensor computed from constants).")
    v = np.asarray(known)
    if v.shape != (2,) or not np.issubdtype(v.dtype, np.integer):
        raise ValueError(f"{api}: 'size' must be a 1-D int32 Tensor of 2 elements: new_height, "
                         f"new_width; got {v.tolist()}.")
    if v.min() <= 0:
        raise ValueError(f"{api}: the new size must be positive, got {v.tolist()}.")
    return int(v[0]), int(v[1])


def _gather_axis(x: Tensor, axis: int, n_in: int | None, n_out: int, method: str) -> Tensor:
    """Bilinear or nearest resampling along ``axis`` by gathers: two rows and a lerp per
    output row (cheaper than the dense matrix on large images). The sample points are
    NumPy constants when ``n_in`` is known, else computed from the run-time size."""
    if n_in is not None:
        if method == "nearest":
            return _a.gather(x, convert_to_tensor(nearest_rows(n_in, n_out)), axis=axis)
        src = _half_pixel(n_in, n_out)
        low = np.floor(src)
        lower = convert_to_tensor(np.maximum(low, 0).astype(np.int32))
        upper = convert_to_tensor(np.minimum(np.ceil(src), n_in - 1).astype(np.int32))
        lerp = convert_to_tensor((src - low).astype(_F))
    else:
        size = _a.shape(x)[axis]
        scale = _m.divide(_m.cast(size, "float32"), _F(n_out))
        centers = convert_to_tensor(np.arange(n_out, dtype=_F) + _F(0.5))
        last = _m.subtract(size, 1)
        if method == "nearest":
            rows = _m.minimum(_m.cast(_m.floor(_m.multiply(centers, scale)), "int32"), last)
            return _a.gather(x, rows, axis=axis)
        src = _m.subtract(_m.multiply(centers, scale), _F(0.5))
        low = _m.floor(src)
        lower = _m.cast(_m.maximum(low, _F(0)), "int32")
        upper = _m.minimum(_m.cast(_m.ceil(src), "int32"), last)
        lerp = _m.subtract(src, low)
    shape = [1] * x.shape.rank
    shape[axis] = n_out
    a = _a.gather(x, lower, axis=axis)
    return _m.add(a, _m.multiply(_m.subtract(_a.gather(x, upper, axis=axis), a),
                                 _a.reshape(lerp, shape)))


def _resize4(x: Tensor, oh: int, ow: int, method: str, antialias: bool) -> Tensor:
    h, w = x.shape.as_list()[1:3]
    if (h is None or w is None) and (method not in ("bilinear", "nearest") or
                                     antialias and method == "bilinear"):
        raise ValueError(f"tf.image.resize: method {method!r}{' with antialias' * antialias} "
                         f"needs the image's height and width when the function is traced, "
                         f"got shape {x.shape}; give them in the input_signature, or use "
                         f"'bilinear' or 'nearest'.")
    if method != "nearest":
        x = _m.cast(x, "float32")
    for axis, n_in, n_out in ((1, h, oh), (2, w, ow)):
        if n_in == n_out and method in ("nearest", "bilinear", "bicubic", "area"):
            continue  # (these sample the pixels themselves at the same size)
        if n_in is None or method == "nearest" or method == "bilinear" and not antialias:
            x = _gather_axis(x, axis, n_in, n_out, method)
        else:
            if method in _LINEAR and not (antialias and method != "area"):
                matrix = _LINEAR[method](n_in, n_out)
            else:  # (the Gaussian and Mitchell kernels blur even at the same size)
                matrix = scale_translate_matrix(n_in, n_out, method, antialias)
            if not np.array_equal(matrix, np.eye(n_in)):
                x = linear_map(x, matrix, axis)
    return x


def resize(images: Any, size: Any, method: Any = ResizeMethod.BILINEAR,
           preserve_aspect_ratio: bool = False, antialias: bool = False,
           name: str | None = None) -> Tensor:
    """Resizes image(s) to ``size`` = [new_height, new_width] with ``method`` (a
    ``tf.image.ResizeMethod`` or its string): half-pixel-center sampling as TF 2, float32
    results except for "nearest", which keeps the dtype. ``antialias=True`` widens the kernel
    when downsampling. ``preserve_aspect_ratio=True`` fits the image inside ``size``.

    >>> import stagecraft as tf
    >>> tf.image.resize([[[0.0], [1.0]]], [1, 4]).numpy()[..., 0].tolist()
    [[0.0, 0.25, 0.75, 1.0]]
    >>> tf.image.resize(tf.zeros([4, 6, 3]), [2, 2], preserve_aspect_ratio=True).shape
    TensorShape([1, 2, 3])
    """
    api = "tf.image.resize"
    x = as_image(images, api, what="images")
    m = _method(method)
    oh, ow = _size(api, size)
    if preserve_aspect_ratio:
        h, w = static_hw(x, api)
        factor = min(_F(oh) / _F(h), _F(ow) / _F(w))
        oh, ow = int(np.rint(factor * _F(h))), int(np.rint(factor * _F(w)))
    if m == "nearest" and not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"{api}: images must be numeric, got {x.dtype.name}.")
    x4, was_3d = batched(x)
    return unbatched(_resize4(x4, oh, ow, m, bool(antialias)), was_3d)


def resize_with_pad(image: Any, target_height: Any, target_width: Any,
                    method: Any = ResizeMethod.BILINEAR, antialias: bool = False) -> Tensor:
    """Resizes to fit inside ``target_height`` x ``target_width`` keeping the aspect ratio,
    then pads the rest with zeros evenly on both sides.

    >>> import stagecraft as tf
    >>> tf.image.resize_with_pad(tf.ones([2, 4, 1]), 4, 4).numpy()[..., 0].tolist()[0]
    [0.0, 0.0, 0.0, 0.0]
    """
    api = "tf.image.resize_with_pad"
    x = as_image(image, api)
    th, tw = _size(api, [target_height, target_width])
    h, w = static_hw(x, api)
    ratio = max(_F(w) / _F(tw), _F(h) / _F(th))
    rh, rw = _F(h) / ratio, _F(w) / ratio
    ph = max(0, int(np.floor((_F(th) - rh) / _F(2))))
    pw = max(0, int(np.floor((_F(tw) - rw) / _F(2))))
    resized = resize(x, [int(rh), int(rw)], method, antialias=antialias)
    return pad_to_bounding_box(resized, ph, pw, th, tw)


def _sample_points(lo: Tensor, hi: Tensor, n_in: int, n_out: int) -> Tensor:
    """[boxes, n_out] input coordinates spread evenly from lo * (n_in - 1) to hi * (n_in - 1)
    (the middle when n_out is 1)."""
    span = float(n_in - 1)
    if n_out == 1:
        return _a.expand_dims(_m.multiply(_m.add(lo, hi), 0.5 * span), 1)
    step = _m.multiply(_m.subtract(hi, lo), span / (n_out - 1))
    steps = convert_to_tensor(np.arange(n_out, dtype=np.float32))
    return _m.add(_a.expand_dims(_m.multiply(lo, span), 1),
                  _m.multiply(_a.expand_dims(step, 1), steps))


def crop_and_resize(image: Any, boxes: Any, box_indices: Any, crop_size: Any,
                    method: str = "bilinear", extrapolation_value: float = 0.0,
                    name: str | None = None) -> Tensor:
    """Crops each box (normalized [y1, x1, y2, x2]: 0 and 1 are the first and last pixel
    centers; y1 > y2 flips) out of image ``box_indices[i]`` of the batch and resamples it to
    ``crop_size`` = [height, width] with "bilinear" or "nearest" sampling; samples outside the
    image take ``extrapolation_value``. Float32 [num_boxes, height, width, depth];
    differentiable with respect to the image and (bilinear) the boxes.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(9.0), [1, 3, 3, 1])
    >>> tf.image.crop_and_resize(x, [[0.0, 0.0, 0.5, 0.5]], [0], [2, 2])[0, ..., 0].numpy().tolist()
    [[0.0, 1.0], [3.0, 4.0]]
    """
    api = "tf.image.crop_and_resize"
    x = _m.cast(as_image(image, api, ranks=(4,)), "float32")
    oh, ow = _size(api, crop_size)
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"{api}: method must be 'bilinear' or 'nearest', got {method!r}.")
    b = _m.cast(convert_to_tensor(boxes), "float32")
    if b.shape.rank != 2 or b.shape.as_list()[1] != 4:
        raise ValueError(f"{api}: boxes must have shape [num_boxes, 4], got {b.shape}.")
    idx = _m.cast(convert_to_tensor(box_indices), "int32")
    if idx.shape.rank != 1:
        raise ValueError(f"{api}: box_indices must have shape [num_boxes], got {idx.shape}.")
    h, w = static_hw(x, api)
    y1, x1, y2, x2 = _a.unstack(b, num=4, axis=1)
    ys, xs = _sample_points(y1, y2, h, oh), _sample_points(x1, x2, w, ow)    # [boxes, oh|ow]
    flat = _a.reshape(x, [-1, x.shape.as_list()[3] or -1])                 # [n * h * w, d]
    base = _a.expand_dims(_a.expand_dims(_m.multiply(idx, h * w), 1), 2)  # [boxes, 1, 1]

    def rows(t: Tensor, size: int) -> Tensor:
        return _m.cast(_m.clip_by_value(t, 0.0, float(size - 1)), "int32")

    def at(r: Tensor, c: Tensor) -> Tensor:  # r [boxes, oh], c [boxes, ow] -> [boxes, oh, ow, d]
        index = _m.add(base, _m.add(_a.expand_dims(_m.multiply(r, w), 2), _a.expand_dims(c, 1)))
        return _a.gather(flat, index)

    if method == "nearest":
        out = at(rows(_m.floor(_m.add(ys, 0.5)), h), rows(_m.floor(_m.add(xs, 0.5)), w))
    else:
        top, left = _m.floor(ys), _m.floor(xs)
        ly = _a.expand_dims(_a.expand_dims(_m.subtract(ys, top), 2), 3)
        lx = _a.expand_dims(_a.expand_dims(_m.subtract(xs, left), 1), 3)
        r0, r1 = rows(top, h), rows(_m.ceil(ys), h)
        c0, c1 = rows(left, w), rows(_m.ceil(xs), w)
        upper = _m.add(at(r0, c0), _m.multiply(_m.subtract(at(r0, c1), at(r0, c0)), lx))
        lower = _m.add(at(r1, c0), _m.multiply(_m.subtract(at(r1, c1), at(r1, c0)), lx))
        out = _m.add(upper, _m.multiply(_m.subtract(lower, upper), ly))

    def inside(t: Tensor, size: int) -> Tensor:
        return _m.logical_and(_m.greater_equal(t, 0.0), _m.less_equal(t, float(size - 1)))
    keep = _m.logical_and(_a.expand_dims(inside(ys, h), 2), _a.expand_dims(inside(xs, w), 1))
    fill = _a.fill([1], float(extrapolation_value))
    return _m.where(_a.expand_dims(keep, 3), out, fill)


__all__ = ["ResizeMethod", "resize", "resize_with_pad", "crop_and_resize"]
