"""Projective transforms of image batches, TensorFlow's ``ImageProjectiveTransformV3``
composed from gathers: what Keras's ``RandomRotation``, ``RandomZoom`` and
``RandomTranslation`` use. Each 8-vector ``[a0, ..., a7]`` maps an output pixel ``(x, y)`` to
the input point ``((a0 x + a1 y + a2) / k, (a3 x + a4 y + a5) / k)`` with ``k = a6 x + a7 y +
1``; points outside the image are filled by ``fill_mode`` (``reflect``, ``wrap``,
``nearest``, or ``constant`` with ``fill_value``), then sampled by ``interpolation``
(``bilinear`` or ``nearest``), with TensorFlow's exact coordinate rules."""
from __future__ import annotations


from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.shape_ops import ensure_shape

__all__ = ["FILL_MODES", "INTERPOLATIONS", "transform", "rotation_matrix", "zoom_matrix",
           "translation_matrix"]

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("bilinear", "nearest")


def _map_coordinate(c: Tensor, n: Tensor, fill_mode: str) -> Tensor:
    """TensorFlow's ``map_coord``: where an input coordinate ``c`` outside ``[0, n - 1]``
    reads from. ``n`` is the (float) length of the axis."""
    if fill_mode == "constant":
        return c
    last = _m.subtract(n, 1.0)
    if fill_mode == "reflect":
        period = _m.multiply(2.0, n)
        low = _m.add(_m.multiply(period, _m.floor(_m.truediv(_m.negative(c), period))), c)
        low = _m.where(_m.less(low, _m.negative(n)), _m.add(low, period),
                       _m.subtract(_m.negative(low), 1.0))
        high = _m.subtract(c, _m.multiply(period, _m.floor(_m.truediv(c, period))))
        high = _m.where(_m.greater_equal(high, n), _m.subtract(_m.subtract(period, high), 1.0),
                        high)
        c = _m.where(_m.less(c, 0.0), low, _m.where(_m.greater(c, last), high, c))
    elif fill_mode == "wrap":
        size = _m.maximum(last, 1.0)
        low = _m.add(c, _m.multiply(n, _m.add(_m.floor(_m.truediv(_m.negative(c), size)), 1.0)))
        high = _m.subtract(c, _m.multiply(n, _m.floor(_m.truediv(c, size))))
        c = _m.where(_m.less(c, 0.0), low, _m.where(_m.greater(c, last), high, c))
    # A one-pixel axis reads pixel 0 (TensorFlow's len <= 1 case), then clamp.
    c = _m.where(_m.less_equal(n, 1.0), _m.multiply(c, 0.0), c)
    return _m.clip_by_value(c, 0.0, _m.maximum(last, 0.0))


def _read(flat_images: Tensor, batch: Tensor, y: Tensor, x: Tensor, height: Tensor,
          width: Tensor, fill_value: float) -> Tensor:
    """``images[batch, y, x]`` (integer-valued float coordinates), ``fill_value`` outside;
    ``flat_images`` is the batch reshaped to ``(batch * height * width, channels)`` (one
    gather needs no static spatial sizes)."""
    inside = _m.logical_and(
        _m.logical_and(_m.greater_equal(y, 0.0), _m.less(y, _m.cast(height, y.dtype))),
        _m.logical_and(_m.greater_equal(x, 0.0), _m.less(x, _m.cast(width, x.dtype))))
    yi = _m.cast(_m.clip_by_value(y, 0.0, _m.cast(height - 1, y.dtype)), _dt.int32)
    xi = _m.cast(_m.clip_by_value(x, 0.0, _m.cast(width - 1, x.dtype)), _dt.int32)
    flat = _m.add(_m.multiply(_m.add(_m.multiply(batch, height), yi), width), xi)
    values = _a.gather(flat_images, flat)
    fill = _m.add(_m.multiply(values, 0.0), _m.cast(fill_value, values.dtype))
    return _m.where(_a.expand_dims(inside, -1), values, fill)


def transform(images: Tensor, transforms: Tensor, interpolation: str = "bilinear",
              fill_mode: str = "reflect", fill_value: float = 0.0) -> Tensor:
    """Applies one projective transform per image of ``images`` ``(batch, height, width,
    channels)`` (floating); ``transforms`` is ``(batch, 8)`` or ``(1, 8)`` (shared).

    >>> import stagecraft as tf
    >>> img = tf.reshape(tf.range(9, dtype=tf.float32), [1, 3, 3, 1])
    >>> shift = tf.constant([[1., 0., 1., 0., 1., 0., 0., 0.]])  # read x + 1
    >>> transform(img, shift, fill_mode="constant")[0, :, :, 0].numpy().tolist()
    [[1.0, 2.0, 0.0], [4.0, 5.0, 0.0], [7.0, 8.0, 0.0]]
    """
    if fill_mode not in FILL_MODES:
        raise ValueError(f"Unknown fill_mode {fill_mode!r}: expected one of {FILL_MODES}.")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"Unknown interpolation {interpolation!r}: expected one of "
                         f"{INTERPOLATIONS}.")
    shape = _a.shape(images)
    batch, height, width = shape[0], shape[1], shape[2]
    f = _dt.float32
    t = _m.cast(transforms, f)
    t = _m.add(t, _m.cast(_a.zeros(_a.stack([batch, 8]), dtype=f), f))  # broadcast (1, 8)
    ys = _a.reshape(_m.cast(_a.range(0, height), f), [1, -1, 1])
    xs = _a.reshape(_m.cast(_a.range(0, width), f), [1, 1, -1])

    def coef(i: int) -> Tensor:
        return _a.reshape(t[:, i], [-1, 1, 1])
    k = _m.add(_m.add(_m.multiply(coef(6), xs), _m.multiply(coef(7), ys)), 1.0)
    degenerate = _m.equal(k, 0.0)
    k = _m.where(degenerate, _m.add(_m.multiply(k, 0.0), 1.0), k)
    src_x = _m.truediv(_m.add(_m.add(_m.multiply(coef(0), xs), _m.multiply(coef(1), ys)),
                              coef(2)), k)
    src_y = _m.truediv(_m.add(_m.add(_m.multiply(coef(3), xs), _m.multiply(coef(4), ys)),
                              coef(5)), k)
    src_x = _map_coordinate(src_x, _m.cast(width, f), fill_mode)
    src_y = _map_coordinate(src_y, _m.cast(height, f), fill_mode)
    b = _m.add(_a.reshape(_a.range(0, batch), [-1, 1, 1]),
               _m.cast(_m.multiply(src_x, 0.0), _dt.int32))
    images_f = images if images.dtype == f else _m.cast(images, f)
    flat_images = _a.reshape(images_f, _a.stack([-1, shape[3]]))

    def read(y: Tensor, x: Tensor) -> Tensor:
        return _read(flat_images, b, y, x, height, width, fill_value)
    if interpolation == "nearest":
        def rounded(v: Tensor) -> Tensor:  # std::round: halves away from zero
            return _m.multiply(_m.sign(v), _m.floor(_m.add(_m.abs(v), 0.5)))
        out = read(rounded(src_y), rounded(src_x))
    else:
        x0, y0 = _m.floor(src_x), _m.floor(src_y)
        x1, y1 = _m.add(x0, 1.0), _m.add(y0, 1.0)
        wx0, wx1 = _a.expand_dims(_m.subtract(x1, src_x), -1), \
            _a.expand_dims(_m.subtract(src_x, x0), -1)
        wy0, wy1 = _a.expand_dims(_m.subtract(y1, src_y), -1), \
            _a.expand_dims(_m.subtract(src_y, y0), -1)
        top = _m.add(_m.multiply(wx0, read(y0, x0)), _m.multiply(wx1, read(y0, x1)))
        bottom = _m.add(_m.multiply(wx0, read(y1, x0)), _m.multiply(wx1, read(y1, x1)))
        out = _m.add(_m.multiply(wy0, top), _m.multiply(wy1, bottom))
    fill = _m.add(_m.multiply(out, 0.0), float(fill_value))
    out = _m.where(_a.expand_dims(degenerate, -1), fill, out)
    out = ensure_shape(out, images.shape)  # same size as the input, as TensorFlow's op
    return out if images.dtype == f else _m.cast(out, images.dtype)


def rotation_matrix(angles: Tensor, height: Tensor, width: Tensor) -> Tensor:
    """Keras's transforms that rotate each image by ``angles`` (radians, counter-clockwise)
    about its center: ``(batch, 8)``."""
    h, w = _m.subtract(height, 1.0), _m.subtract(width, 1.0)
    cos, sin = _m.cos(angles), _m.sin(angles)
    x_offset = _m.truediv(_m.subtract(w, _m.subtract(_m.multiply(cos, w), _m.multiply(sin, h))),
                          2.0)
    y_offset = _m.truediv(_m.subtract(h, _m.add(_m.multiply(sin, w), _m.multiply(cos, h))), 2.0)
    zero = _m.multiply(angles, 0.0)
    return _a.stack([cos, _m.negative(sin), x_offset, sin, cos, y_offset, zero, zero], axis=1)


def zoom_matrix(zoom_x: Tensor, zoom_y: Tensor, height: Tensor, width: Tensor) -> Tensor:
    """Keras's transforms that scale each image by ``zoom_x``/``zoom_y`` (> 1 zooms out)
    about its center: ``(batch, 8)``."""
    x_offset = _m.multiply(_m.truediv(_m.subtract(width, 1.0), 2.0), _m.subtract(1.0, zoom_x))
    y_offset = _m.multiply(_m.truediv(_m.subtract(height, 1.0), 2.0), _m.subtract(1.0, zoom_y))
    zero = _m.multiply(zoom_x, 0.0)
    return _a.stack([zoom_x, zero, x_offset, zero, zoom_y, y_offset, zero, zero], axis=1)


def translation_matrix(dx: Tensor, dy: Tensor) -> Tensor:
    """Keras's transforms that move each image by ``(dx, dy)`` pixels: ``(batch, 8)``."""
    zero = _m.multiply(dx, 0.0)
    one = _m.add(zero, 1.0)
    return _a.stack([one, zero, _m.negative(dx), zero, one, _m.negative(dy), zero, zero], axis=1)

