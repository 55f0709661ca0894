"""``tf.image``'s colour ops: colour-space conversions (grayscale, HSV, YIQ, YUV), the
``adjust_*`` family and ``per_image_standardization``, written from TensorFlow 2's definitions
with elementwise stagecraft ops (differentiable; the HSV branches divide by guarded
denominators so untaken branches give no NaN gradients).

The ``adjust_*`` ops work in float32 (other dtypes go through ``convert_image_dtype``) and
convert back to the input's dtype, saturating where TF does."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import at_least_3d, const, linear_map, rgb, static_float
from stagecraft.ops.image_dtype import convert_image_dtype
from stagecraft.ops.stable_math_ops import reduce_std

_GRAY = np.array([0.2989, 0.5870, 0.1140])
# [input channel, output channel] matrices of the linear colour spaces.
_RGB_TO_YIQ = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                        [0.114, -0.32134392, 0.31119955]])
_YIQ_TO_RGB = np.array([[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
                        [0.6208248, -0.64720424, 1.70423049]])
_RGB_TO_YUV = np.array([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                        [0.114, 0.43601035, -0.10001026]])
_YUV_TO_RGB = np.array([[1, 1, 1], [0, -0.394642334, 2.03206185],
                        [1.13988303, -0.58062185, 0]])


def _float_work(image: Tensor) -> tuple[Tensor, Any]:
    """TF's working copy for the adjust_* ops (float32 as is, else converted) and the
    original dtype."""
    d = image.dtype
    return (image if d.name == "float32" else convert_image_dtype(image, "float32")), d


def _floats_only(api: str, x: Tensor) -> Tensor:
    if not x.dtype.is_floating:
        raise TypeError(f"{api}: images must be float32 or float64, got {x.dtype.name}; convert "
                        f"them with tf.image.convert_image_dtype first.")
    return x


def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """Luma (0.2989 R + 0.5870 G + 0.1140 B) with a last axis of size 1, in the input dtype.

    >>> import stagecraft as tf
    >>> round(float(tf.image.rgb_to_grayscale([[[1.0, 1.0, 1.0]]])[0, 0, 0]), 4)
    0.9999
    """
    x = rgb(images, "tf.image.rgb_to_grayscale", "images")
    flt = convert_image_dtype(x, "float32")
    gray = linear_map(flt, _GRAY[None, :], -1)
    return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """Repeats the single channel three times.

    >>> import stagecraft as tf
    >>> tf.image.grayscale_to_rgb([[[5]]]).numpy().tolist()
    [[[5, 5, 5]]]
    """
    x = convert_to_tensor(images)
    if x.shape.rank is None or x.shape.rank < 2 or x.shape.as_list()[-1] != 1:
        raise ValueError(f"tf.image.grayscale_to_rgb: the last dimension of a grayscale image "
                         f"should be size 1 (and the rank at least 2), got shape {x.shape}.")
    return _a.tile(x, [1] * (x.shape.rank - 1) + [3])


def _channels(x: Tensor) -> list:
    return _a.unstack(x, num=3, axis=-1)


def hsv_parts(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Hue in [0, 1), saturation and value of RGB ``x`` (TF's RGBToHSV)."""
    r, g, b = _channels(x)
    v = _m.reduce_max(x, axis=-1)
    spread = _m.subtract(v, _m.reduce_min(x, axis=-1))
    zero, one = _a.zeros_like(v), _a.ones_like(v)
    s = _m.where(_m.greater(v, zero), _m.divide(spread, _m.where(_m.greater(v, zero), v, one)),
                 zero)
    has_hue = _m.greater(spread, zero)
    span = _m.multiply(_m.where(has_hue, spread, one), const(6.0, x.dtype))
    hue = _m.where(_m.equal(r, v), _m.divide(_m.subtract(g, b), span),
                   _m.where(_m.equal(g, v),
                            _m.add(_m.divide(_m.subtract(b, r), span), const(2 / 6, x.dtype)),
                            _m.add(_m.divide(_m.subtract(r, g), span), const(4 / 6, x.dtype))))
    hue = _m.where(has_hue, hue, zero)
    return _m.where(_m.less(hue, zero), _m.add(hue, one), hue), s, v


def _in(category: Tensor, values: tuple) -> Tensor:
    out = _m.equal(category, values[0])
    for v in values[1:]:
        out = _m.logical_or(out, _m.equal(category, v))
    return out


def rgb_from_hue6(h6: Tensor, s: Tensor, v: Tensor) -> Tensor:
    """RGB of hue ``h6`` in [0, 6), saturation and value (TF's HSVToRGB; hue outside
    [0, 6) gives the grey ``v - s * v``)."""
    c = _m.multiply(s, v)
    m = _m.subtract(v, c)
    category = _m.cast(h6, "int32")  # truncates toward zero as the C++ kernel does
    frac = _m.floormod(h6, const(2.0, h6.dtype))
    x = _m.multiply(c, _m.subtract(_a.ones_like(c), _m.abs(_m.subtract(frac, _a.ones_like(c)))))
    zero = _a.zeros_like(c)

    def channel(full: tuple, part: tuple) -> Tensor:
        return _m.add(_m.where(_in(category, full), c, _m.where(_in(category, part), x, zero)), m)

    return _a.stack([channel((0, 5), (1, 4)), channel((1, 2), (0, 3)), channel((3, 4), (2, 5))],
                    axis=-1)


def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB (floats in [0, 1]) to hue, saturation, value, each in [0, 1].

    >>> import stagecraft as tf
    >>> hsv = tf.image.rgb_to_hsv([[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    >>> hsv.numpy().astype(float).round(4).tolist()
    [[[0.0, 1.0, 1.0], [0.6667, 1.0, 1.0]]]
    """
    x = _floats_only("tf.image.rgb_to_hsv", rgb(images, "tf.image.rgb_to_hsv", "images"))
    return _a.stack(list(hsv_parts(x)), axis=-1)


def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """Hue, saturation, value (each in [0, 1]) to RGB.

    >>> import stagecraft as tf
    >>> tf.image.hsv_to_rgb([[[0.5, 1.0, 1.0]]]).numpy().tolist()
    [[[0.0, 1.0, 1.0]]]
    """
    x = _floats_only("tf.image.hsv_to_rgb", rgb(images, "tf.image.hsv_to_rgb", "images"))
    h, s, v = _channels(x)
    return rgb_from_hue6(_m.multiply(h, const(6.0, x.dtype)), s, v)


def _linear_space(api: str, images: Any, matrix: np.ndarray) -> Tensor:
    x = _floats_only(api, rgb(images, api, "images"))
    return linear_map(x, matrix.T, -1)


def rgb_to_yiq(images: Any) -> Tensor:
    """RGB to YIQ (luma, in-phase, quadrature).

    >>> import stagecraft as tf
    >>> (tf.image.rgb_to_yiq([[[1.0, 1.0, 1.0]]]).numpy().astype(float).round(4) + 0.0).tolist()
    [[[1.0, 0.0, 0.0]]]
    """
    return _linear_space("tf.image.rgb_to_yiq", images, _RGB_TO_YIQ)


def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ to RGB (the inverse of ``rgb_to_yiq``).

    >>> import stagecraft as tf
    >>> tf.image.yiq_to_rgb([[[1.0, 0.0, 0.0]]]).numpy().tolist()
    [[[1.0, 1.0, 1.0]]]
    """
    return _linear_space("tf.image.yiq_to_rgb", images, _YIQ_TO_RGB)


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB to YUV (luma and two chroma channels).

    >>> import stagecraft as tf
    >>> (tf.image.rgb_to_yuv([[[1.0, 1.0, 1.0]]]).numpy().astype(float).round(4) + 0.0).tolist()
    [[[1.0, 0.0, 0.0]]]
    """
    return _linear_space("tf.image.rgb_to_yuv", images, _RGB_TO_YUV)


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV to RGB (the inverse of ``rgb_to_yuv``).

    >>> import stagecraft as tf
    >>> tf.image.yuv_to_rgb([[[1.0, 0.0, 0.0]]]).numpy().tolist()
    [[[1.0, 1.0, 1.0]]]
    """
    return _linear_space("tf.image.yuv_to_rgb", images, _YUV_TO_RGB)


def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """Adds ``delta`` to every channel (in float, then back to the input dtype, saturating).

    >>> import stagecraft as tf
    >>> tf.image.adjust_brightness(tf.constant([[[250]]], tf.uint8), 0.1).numpy().tolist()
    [[[255]]]
    """
    flt, d = _float_work(convert_to_tensor(image))
    return convert_image_dtype(_m.add(flt, const(delta, flt.dtype)), d, saturate=True)


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """Moves every channel of each image away from (factor > 1) or toward its mean over the
    image: ``(x - mean) * contrast_factor + mean``.

    >>> import stagecraft as tf
    >>> tf.image.adjust_contrast([[[1.0], [3.0]]], 2.0).numpy().tolist()
    [[[0.0], [4.0]]]
    """
    x = at_least_3d(images, "tf.image.adjust_contrast", "images")
    flt, d = _float_work(x)
    mean = _m.reduce_mean(flt, axis=[-3, -2], keepdims=True)
    out = _m.add(_m.multiply(_m.subtract(flt, mean), const(contrast_factor, flt.dtype)), mean)
    return convert_image_dtype(out, d, saturate=True)


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Tensor:
    """Gamma correction ``gain * x ** gamma`` (in float, back to the input dtype).

    >>> import stagecraft as tf
    >>> tf.image.adjust_gamma([[[0.25]]], 0.5).numpy().tolist()
    [[[0.5]]]
    """
    flt, d = _float_work(convert_to_tensor(image))
    g = static_float(gamma, "tf.image.adjust_gamma", "gamma")
    if g is not None and g < 0:
        raise ValueError(f"tf.image.adjust_gamma: gamma should be a non-negative real number, "
                         f"got {g}.")
    out = _m.multiply(const(gain, flt.dtype), _m.pow(flt, const(gamma, flt.dtype)))
    return convert_image_dtype(out, d, saturate=True)


def adjust_saturation(image: Any, saturation_factor: Any, name: str | None = None) -> Tensor:
    """Scales the HSV saturation by ``saturation_factor`` (clipped to [0, 1]).

    >>> import stagecraft as tf
    >>> tf.image.adjust_saturation([[[1.0, 0.5, 0.5]]], 0.0).numpy().tolist()
    [[[1.0, 1.0, 1.0]]]
    """
    flt, d = _float_work(rgb(image, "tf.image.adjust_saturation"))
    h, s, v = hsv_parts(flt)
    s = _m.clip_by_value(_m.multiply(s, const(saturation_factor, flt.dtype)), 0.0, 1.0)
    return convert_image_dtype(rgb_from_hue6(_m.multiply(h, const(6.0, flt.dtype)), s, v), d)


def adjust_hue(image: Any, delta: Any, name: str | None = None) -> Tensor:
    """Rotates the hue by ``delta`` (in [-1, 1], a fraction of the colour circle).

    >>> import stagecraft as tf
    >>> tf.image.adjust_hue([[[1.0, 0.0, 0.0]]], 1 / 3).numpy().astype(float).round(4).tolist()
    [[[0.0, 1.0, 0.0]]]
    """
    flt, d = _float_work(rgb(image, "tf.image.adjust_hue"))
    known = static_float(delta, "tf.image.adjust_hue", "delta")
    if known is not None and not -1.0 <= known <= 1.0:
        raise ValueError(f"tf.image.adjust_hue: delta must be in the interval [-1, 1], got "
                         f"{known}.")
    h, s, v = hsv_parts(flt)
    six = const(6.0, flt.dtype)
    h6 = _m.floormod(_m.multiply(_m.add(h, const(delta, flt.dtype)), six), six)
    h6 = _m.where(_m.greater_equal(h6, six), _m.subtract(h6, six), h6)  # float rounding
    return convert_image_dtype(rgb_from_hue6(h6, s, v), d)


def per_image_standardization(image: Any) -> Tensor:
    """Scales each image (the last three axes) to mean 0 and variance 1:
    ``(x - mean) / max(stddev, 1 / sqrt(N))``, N its number of elements; float32 result.

    >>> import stagecraft as tf
    >>> y = tf.image.per_image_standardization([[[1.0], [3.0]]])
    >>> y.numpy().tolist()
    [[[-1.0], [1.0]]]
    """
    x = _m.cast(at_least_3d(image, "tf.image.per_image_standardization"), "float32")
    size = x.shape.as_list()[-3:]
    if None in size:
        count = _m.cast(_m.reduce_prod(_a.shape(x)[-3:]), "float32")
    else:
        count = convert_to_tensor(np.float32(np.prod(size)))
    mean = _m.reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
    std = reduce_std(x, axis=[-1, -2, -3], keepdims=True)
    return _m.divide(_m.subtract(x, mean), _m.maximum(std, _m.rsqrt(count)))


__all__ = ["rgb_to_grayscale", "grayscale_to_rgb", "rgb_to_hsv", "hsv_to_rgb", "rgb_to_yiq",
           "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb", "adjust_brightness", "adjust_contrast",
           "adjust_gamma", "adjust_saturation", "adjust_hue", "per_image_standardization"]
