"""``tf.image``'s image measures: finite-difference and Sobel gradients, total variation, PSNR,
SSIM and multi-scale SSIM, as TensorFlow 2 defines them. The SSIM window is a Gaussian, which
is separable, so it is applied as one banded matrix along the height and one along the width
(``linear_map``); everything is differentiable."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import as_image, const, dims, linear_map
from stagecraft.ops.image_dtype import convert_image_dtype
from stagecraft.ops.manip_ops import pad
from stagecraft.ops.nn_ops import relu

MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """Forward differences ``(dy, dx)`` of a batch [batch, height, width, channels]: ``dy[i] =
    x[i + 1] - x[i]`` along the height, ``dx`` along the width, zero in the last row/column.

    >>> import stagecraft as tf
    >>> dy, dx = tf.image.image_gradients(tf.reshape(tf.range(4.0), [1, 2, 2, 1]))
    >>> dy.numpy()[0, ..., 0].tolist(), dx.numpy()[0, ..., 0].tolist()
    ([[2.0, 2.0], [0.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])
    """
    x = as_image(image, "tf.image.image_gradients", ranks=(4,))
    dy = _m.subtract(x[:, 1:], x[:, :-1])
    dx = _m.subtract(x[:, :, 1:], x[:, :, :-1])
    return (pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]]), pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]]))


def sobel_edges(image: Any) -> Tensor:
    """The vertical and horizontal Sobel responses of each channel (reflect-padded borders):
    shape [batch, height, width, channels, 2], ``[..., 0]`` the y (rows) derivative.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(9.0), [1, 3, 3, 1])
    >>> tf.image.sobel_edges(x)[0, 1, 1, 0].numpy().tolist()
    [24.0, 8.0]
    """
    x = as_image(image, "tf.image.sobel_edges", ranks=(4,))
    p = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], "REFLECT")
    h, w = dims(x)[1], dims(x)[2]
    if h is None or w is None:
        raise ValueError(f"tf.image.sobel_edges: height and width must be known when the "
                         f"function is traced, got shape {x.shape}.")

    def window(a: int, b: int) -> Tensor:
        return p[:, a:a + h, b:b + w]

    two = const(2, x.dtype)
    dy = _m.add_n([_m.subtract(window(2, 0), window(0, 0)),
                   _m.multiply(two, _m.subtract(window(2, 1), window(0, 1))),
                   _m.subtract(window(2, 2), window(0, 2))])
    dx = _m.add_n([_m.subtract(window(0, 2), window(0, 0)),
                   _m.multiply(two, _m.subtract(window(1, 2), window(1, 0))),
                   _m.subtract(window(2, 2), window(2, 0))])
    return _a.stack([dy, dx], axis=-1)


def total_variation(images: Any, name: str | None = None) -> Tensor:
    """The sum of absolute differences between neighbouring pixels: a scalar for one image,
    one value per image for a batch.

    >>> import stagecraft as tf
    >>> float(tf.image.total_variation([[[0.0], [1.0]], [[3.0], [1.0]]]))  # 3 + 0 + 1 + 2
    6.0
    """
    x = as_image(images, "tf.image.total_variation", what="images")
    off = x.shape.rank - 3
    lead = (slice(None),) * off
    d1 = _m.subtract(x[lead + (slice(1, None),)], x[lead + (slice(None, -1),)])
    d2 = _m.subtract(x[lead + (slice(None), slice(1, None))],
                     x[lead + (slice(None), slice(None, -1))])
    axis = None if off == 0 else [1, 2, 3]
    return _m.add(_m.reduce_sum(_m.abs(d1), axis=axis), _m.reduce_sum(_m.abs(d2), axis=axis))


def _pair(api: str, a: Any, b: Any) -> tuple[Tensor, Tensor]:
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    for what, t in (("img1", a), ("img2", b)):
        if t.shape.rank is None or t.shape.rank < 3:
            raise ValueError(f"{api}: '{what}' (shape {t.shape}) must have at least three "
                             f"dimensions ([..., height, width, channels]).")
    sa, sb = dims(a)[-3:], dims(b)[-3:]
    if any(x is not None and y is not None and x != y for x, y in zip(sa, sb)):
        raise ValueError(f"{api}: the two images must have the same height, width and "
                         f"channels, got shapes {a.shape} and {b.shape}.")
    if a.dtype != b.dtype:
        raise TypeError(f"{api}: the two images must have the same dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}.")
    return a, b


def _as_float(a: Tensor, max_val: Any) -> tuple[Tensor, Tensor]:
    """``max_val`` in ``a``'s dtype converted like the image (so 255 for uint8 becomes 1)."""
    return convert_image_dtype(_m.cast(max_val, a.dtype), "float32"), convert_image_dtype(
        a, "float32")


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """Peak signal-to-noise ratio in dB, ``20 log10(max_val) - 10 log10(mse)``, per image
    (float32; ``max_val`` is the dynamic range, e.g. 255 or 1.0).

    >>> import stagecraft as tf
    >>> round(float(tf.image.psnr(tf.zeros([2, 2, 1]), tf.fill([2, 2, 1], 0.1), 1.0)), 3)
    20.0
    """
    a, b = _pair("tf.image.psnr", a, b)
    peak, fa = _as_float(a, max_val)
    fb = convert_image_dtype(b, "float32")
    mse = _m.reduce_mean(_m.squared_difference(fa, fb), axis=[-3, -2, -1])
    return _m.subtract(_m.multiply(_m.cast(20.0 / np.log(10.0), "float32"), _m.log(peak)),
                       _m.multiply(_m.cast(10.0 / np.log(10.0), "float32"), _m.log(mse)))


def gaussian_window(size: int, sigma: float, n: int) -> np.ndarray:
    """The [n - size + 1, n] matrix of a normalized 1-D Gaussian filter with VALID padding."""
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-0.5 * coords ** 2 / sigma ** 2)
    g /= g.sum()
    m = np.zeros((n - size + 1, n))
    for i in range(n - size + 1):
        m[i, i:i + size] = g
    return m


def _ssim_parts(x: Tensor, y: Tensor, peak: Tensor, size: int, sigma: float, k1: float,
                k2: float) -> tuple[Tensor, Tensor]:
    """Per-pixel luminance and contrast-structure maps [..., h', w', channels]."""
    h, w = dims(x)[-3], dims(x)[-2]
    if h is None or w is None:
        raise ValueError(f"tf.image.ssim: height and width must be known when the function is "
                         f"traced, got shape {x.shape}.")
    if h < size or w < size:
        raise InvalidArgumentError(f"tf.image.ssim: the images ({h}x{w}) must be at least "
                                   f"filter_size ({size}) high and wide; pass a smaller "
                                   f"filter_size.")
    rows, cols = gaussian_window(size, sigma, h), gaussian_window(size, sigma, w)

    def blur(t: Tensor) -> Tensor:
        return linear_map(linear_map(t, rows, -3), cols, -2)

    c1 = _m.square(_m.multiply(_m.cast(k1, "float32"), peak))
    c2 = _m.square(_m.multiply(_m.cast(k2, "float32"), peak))
    mx, my = blur(x), blur(y)
    num0 = _m.multiply(_m.multiply(mx, my), 2.0)
    den0 = _m.add(_m.square(mx), _m.square(my))
    luminance = _m.divide(_m.add(num0, c1), _m.add(den0, c1))
    num1 = _m.multiply(blur(_m.multiply(x, y)), 2.0)
    den1 = blur(_m.add(_m.square(x), _m.square(y)))
    cs = _m.divide(_m.add(_m.subtract(num1, num0), c2), _m.add(_m.subtract(den1, den0), c2))
    return luminance, cs


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, return_index_map: bool = False) -> Tensor:
    """Structural similarity of two (batches of) images with a ``filter_size`` Gaussian window
    (VALID), averaged over the image and its channels (``return_index_map=True`` keeps the
    per-pixel map). Float32 result; ``max_val`` is the dynamic range.

    >>> import stagecraft as tf
    >>> x = tf.random.stateless_uniform([8, 8, 1], seed=[1, 2])
    >>> round(float(tf.image.ssim(x, x, 1.0, filter_size=3)), 4)
    1.0
    """
    a, b = _pair("tf.image.ssim", img1, img2)
    peak, fa = _as_float(a, max_val)
    fb = convert_image_dtype(b, "float32")
    lum, cs = _ssim_parts(fa, fb, peak, int(filter_size), float(filter_sigma), k1, k2)
    value = _m.multiply(lum, cs)
    if not return_index_map:
        value = _m.reduce_mean(value, axis=[-3, -2])
    return _m.reduce_mean(value, axis=[-1])


def _halve(n: int) -> np.ndarray:
    """2x average pooling of an axis of size n (an odd n repeats its last pixel first)."""
    m = np.zeros(((n + 1) // 2, n))
    for i in range((n + 1) // 2):
        m[i, 2 * i] += 0.5
        m[i, min(2 * i + 1, n - 1)] += 0.5
    return m


def ssim_multiscale(img1: Any, img2: Any, max_val: Any,
                    power_factors: Sequence[float] = MSSSIM_WEIGHTS, filter_size: int = 11,
                    filter_sigma: float = 1.5, k1: float = 0.01, k2: float = 0.03) -> Tensor:
    """Multi-scale SSIM: the contrast-structure term at ``len(power_factors)`` scales (each
    half the size of the one before) and SSIM at the coarsest, combined as a weighted
    geometric mean, averaged over channels. The coarsest scale must still be at least
    ``filter_size`` wide.

    >>> import stagecraft as tf
    >>> x = tf.random.stateless_uniform([12, 12, 1], seed=[1, 2])
    >>> round(float(tf.image.ssim_multiscale(x, x, 1.0, (0.5, 0.5), filter_size=3)), 4)
    1.0
    """
    a, b = _pair("tf.image.ssim_multiscale", img1, img2)
    peak, fa = _as_float(a, max_val)
    fb = convert_image_dtype(b, "float32")
    scales = []
    for k in range(len(power_factors)):
        if k:
            h, w = dims(fa)[-3], dims(fa)[-2]
            down = _halve(h), _halve(w)
            fa, fb = (linear_map(linear_map(t, down[0], -3), down[1], -2) for t in (fa, fb))
        lum, cs = _ssim_parts(fa, fb, peak, int(filter_size), float(filter_sigma), k1, k2)
        scales.append(_m.reduce_mean(cs, axis=[-3, -2]))
    last = _m.reduce_mean(_m.multiply(lum, cs), axis=[-3, -2])
    stacked = _a.stack([relu(s) for s in scales[:-1]] + [relu(last)], axis=-1)
    weights = convert_to_tensor(np.asarray(power_factors, np.float32))
    return _m.reduce_mean(_m.reduce_prod(_m.pow(stacked, weights), axis=[-1]), axis=[-1])


__all__ = ["image_gradients", "sobel_edges", "total_variation", "psnr", "ssim",
           "ssim_multiscale"]
