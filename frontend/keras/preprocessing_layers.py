"""Keras's preprocessing layers for numbers and images: ``Rescaling``, ``Resizing``,
``CenterCrop``, the training-time augmentations ``RandomCrop``, ``RandomFlip``,
``RandomRotation``, ``RandomZoom``, ``RandomTranslation``, ``RandomContrast`` and
``RandomBrightness`` (identity, or a deterministic resize, at inference), and
``Discretization`` (with ``adapt``) and ``CategoryEncoding``. Images are ``(batch, height,
width, channels)`` or one unbatched ``(height, width, channels)`` image; they are built on
``tf.image`` and the projective transform of ``image_transform``."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from stagecraft import random as _random
from stagecraft.data import Dataset
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.image_transform import (FILL_MODES, INTERPOLATIONS, rotation_matrix,
                                              transform, translation_matrix, zoom_matrix)
from stagecraft.ops import array_ops as _a
from stagecraft.ops import check_ops
from stagecraft.ops import image_color as _color
from stagecraft.ops import manip_ops as _manip
from stagecraft.ops import image_resize as _resize
from stagecraft.ops import math_ops as _m
from stagecraft.ops import segment_ops as _seg

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "RandomBrightness",
           "RandomContrast", "RandomCrop", "RandomFlip", "RandomHeight", "RandomRotation",
           "RandomTranslation", "RandomWidth", "RandomZoom", "Rescaling", "Resizing"]


def _check_size(layer: str, height: Any, width: Any) -> tuple[int, int]:
    for what, n in (("height", height), ("width", width)):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"{layer}: {what} must be a positive integer; got {n!r}.")
    return int(height), int(width)


def _batched(fn: Callable[[Tensor], Tensor], images: Tensor) -> Tensor:
    """``fn`` on a batch; an unbatched image is given a batch of one and taken out again."""
    if images.shape.rank == 3:
        return fn(_a.expand_dims(images, 0))[0]
    if images.shape.rank != 4:
        raise ValueError(f"Image preprocessing layers expect (batch, height, width, channels) "
                         f"or (height, width, channels) inputs; got shape {images.shape}.")
    return fn(images)


def _smart_resize(images: Tensor, height: int, width: int, interpolation: str) -> Tensor:
    """Keras's ``smart_resize``: the largest centered window with the target aspect ratio,
    resized to ``(height, width)``."""
    shape = _a.shape(images)
    h, w = _m.cast(shape[1], _dt.float32), _m.cast(shape[2], _dt.float32)
    crop_h = _m.minimum(h, _m.floor(_m.truediv(_m.multiply(w, float(height)), float(width))))
    crop_w = _m.minimum(w, _m.floor(_m.truediv(_m.multiply(h, float(width)), float(height))))
    top = _m.cast(_m.floor(_m.truediv(_m.subtract(h, crop_h), 2.0)), _dt.int32)
    left = _m.cast(_m.floor(_m.truediv(_m.subtract(w, crop_w), 2.0)), _dt.int32)
    window = _manip.slice(images, _a.stack([0, top, left, 0]),
                      _a.stack([-1, _m.cast(crop_h, _dt.int32), _m.cast(crop_w, _dt.int32), -1]))
    return _resize.resize(window, [height, width], method=interpolation)


@serialization.register
class Rescaling(Layer):
    """``inputs * scale + offset`` (e.g. ``scale=1/255`` maps pixels to [0, 1]).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Rescaling(1 / 127.5, offset=-1)(tf.constant([0., 255.])).numpy().tolist()
    [-1.0, 1.0]
    """

    def __init__(self, scale: Any, offset: Any = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs: Tensor) -> Tensor:
        x = _m.cast(inputs, self._dtype)
        scale = _m.cast(convert_to_tensor(self.scale), self._dtype)
        offset = _m.cast(convert_to_tensor(self.offset), self._dtype)
        return _m.add(_m.multiply(x, scale), offset)

    def get_config(self) -> dict:
        def plain(v: Any) -> Any:
            return np.asarray(v).tolist()
        return {**super().get_config(), "scale": plain(self.scale), "offset": plain(self.offset)}


@serialization.register
class Resizing(Layer):
    """Resizes images to ``(height, width)`` with ``tf.image.resize`` (``interpolation``:
    ``'bilinear'``, ``'nearest'``, ``'bicubic'``, ...); with ``crop_to_aspect_ratio`` the
    largest centered window of the target aspect ratio is resized instead, without
    distortion.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Resizing(2, 3)(tf.ones([1, 4, 4, 3])).shape
    TensorShape([1, 2, 3, 3])
    """

    def __init__(self, height: int, width: int, interpolation: str = "bilinear",
                 crop_to_aspect_ratio: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.height, self.width = _check_size("Resizing", height, width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def call(self, inputs: Tensor) -> Tensor:
        x = _m.cast(inputs, self._dtype)
        if self.crop_to_aspect_ratio:
            return _batched(lambda b: _smart_resize(b, self.height, self.width,
                                                    self.interpolation), x)
        return _batched(lambda b: _resize.resize(b, [self.height, self.width],
                                                 method=self.interpolation), x)

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio}


@serialization.register
class CenterCrop(Layer):
    """The central ``(height, width)`` window of each image; an image smaller than that is
    first cropped to the target aspect ratio and resized (Keras's rule).

    >>> import stagecraft as tf
    >>> img = tf.reshape(tf.range(16, dtype=tf.float32), [4, 4, 1])
    >>> tf.keras.layers.CenterCrop(2, 2)(img)[:, :, 0].numpy().tolist()
    [[5.0, 6.0], [9.0, 10.0]]
    """

    def __init__(self, height: int, width: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.height, self.width = _check_size("CenterCrop", height, width)

    def _crop(self, images: Tensor) -> Tensor:
        dims = images.shape.as_list()
        if dims[1] is not None and dims[2] is not None and \
                (dims[1] < self.height or dims[2] < self.width):
            return _smart_resize(images, self.height, self.width, "bilinear")
        shape = _a.shape(images)
        top = _m.floordiv(_m.subtract(shape[1], self.height), 2)
        left = _m.floordiv(_m.subtract(shape[2], self.width), 2)
        return _manip.slice(images, _a.stack([0, top, left, 0]),
                        [-1, self.height, self.width, -1])

    def call(self, inputs: Tensor) -> Tensor:
        return _batched(self._crop, _m.cast(inputs, self._dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}


class _RandomLayer(Layer):
    """An augmentation: ``_augment(batch)`` while training, the identity otherwise. As in
    Keras, a direct call defaults to ``training=True``; ``predict`` and ``evaluate`` (and an
    outer call with ``training=False``) turn it off."""

    def __init__(self, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seed = seed

    def _uniform(self, shape: Any, low: float, high: float) -> Tensor:
        return _random.uniform(shape, low, high, dtype=_dt.float32, seed=self.seed)

    def _augment(self, images: Tensor) -> Tensor:
        # the one hook each random augmentation layer defines
        raise NotImplementedError(f"{type(self).__name__} must define _augment(images), which "
                                  f"returns the augmented batch.")

    def _inference(self, images: Tensor) -> Tensor:
        return images

    def call(self, inputs: Tensor, training: Any = True) -> Tensor:
        x = _m.cast(inputs, self._dtype)
        return _batched(self._augment if training else self._inference, x)

    def get_config(self) -> dict:
        return {**super().get_config(), "seed": self.seed}


@serialization.register
class RandomCrop(_RandomLayer):
    """While training, a random ``(height, width)`` window (one offset for the batch, as
    Keras); at inference, and for images smaller than the window, Keras's center crop to
    the aspect ratio and resize.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomCrop(2, 3, seed=1)(tf.ones([2, 5, 5, 1]), training=True).shape
    TensorShape([2, 2, 3, 1])
    """

    def __init__(self, height: int, width: int, seed: int | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        self.height, self.width = _check_size("RandomCrop", height, width)

    def _inference(self, images: Tensor) -> Tensor:
        dims = images.shape.as_list()
        if dims[1] == self.height and dims[2] == self.width:
            return images
        return _smart_resize(images, self.height, self.width, "bilinear")

    def _augment(self, images: Tensor) -> Tensor:
        dims = images.shape.as_list()
        if dims[1] is not None and dims[2] is not None and \
                (dims[1] < self.height or dims[2] < self.width):
            return self._inference(images)
        shape = _a.shape(images)
        spare_h = _m.cast(_m.subtract(shape[1], self.height), _dt.float32)
        spare_w = _m.cast(_m.subtract(shape[2], self.width), _dt.float32)
        top = _m.cast(_m.floor(_m.multiply(self._uniform([], 0.0, 1.0), _m.add(spare_h, 1.0))),
                      _dt.int32)
        left = _m.cast(_m.floor(_m.multiply(self._uniform([], 0.0, 1.0),
                                            _m.add(spare_w, 1.0))), _dt.int32)
        return _manip.slice(images, _a.stack([0, top, left, 0]), [-1, self.height, self.width, -1])

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}


@serialization.register
class RandomFlip(_RandomLayer):
    """While training, flips each image left-right and/or up-down with probability 1/2
    (``mode``: ``'horizontal'``, ``'vertical'`` or ``'horizontal_and_vertical'``).

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomFlip("horizontal")(tf.ones([2, 3, 3, 1])).shape
    TensorShape([2, 3, 3, 1])
    """

    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode: str = "horizontal_and_vertical", seed: int | None = None,
                 **kwargs: Any):
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: mode must be one of {self._MODES}; got {mode!r}.")
        super().__init__(seed, **kwargs)
        self.mode = mode

    def _flip(self, images: Tensor, axis: int) -> Tensor:
        coin = _m.less(self._uniform(_a.stack([_a.shape(images)[0]]), 0.0, 1.0), 0.5)
        flipped = _manip.reverse(images, [axis])
        return _m.where(_a.reshape(coin, [-1, 1, 1, 1]), flipped, images)

    def _augment(self, images: Tensor) -> Tensor:
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            images = self._flip(images, 2)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            images = self._flip(images, 1)
        return images

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}


def _factor_range(layer: str, what: str, factor: Any, low: float | None = None,
                  high: float | None = None) -> tuple[float, float]:
    """Keras's factor: a number ``f`` means ``(-f, f)``, a pair ``(lower, upper)``."""
    if isinstance(factor, (list, tuple)) and len(factor) == 2:
        lower, upper = float(factor[0]), float(factor[1])
    elif isinstance(factor, (int, float)) and not isinstance(factor, bool):
        lower, upper = -abs(float(factor)), abs(float(factor))
    else:
        raise ValueError(f"{layer}: {what} must be a number or a (lower, upper) pair; got "
                         f"{factor!r}.")
    if upper < lower:
        raise ValueError(f"{layer}: {what} has lower bound {lower} above upper bound {upper}.")
    for bound in (lower, upper):
        if (low is not None and bound < low) or (high is not None and bound > high):
            raise ValueError(f"{layer}: {what} bounds must be in [{low}, {high}]; got "
                             f"{factor!r}.")
    return lower, upper


class _Transforming(_RandomLayer):
    """What rotation, zoom and translation share: fill mode, interpolation, fill value."""

    def __init__(self, fill_mode: str, interpolation: str, seed: int | None,
                 fill_value: float, **kwargs: Any):
        if fill_mode not in FILL_MODES:
            raise NotImplementedError(f"{type(self).__name__}: unknown fill_mode {fill_mode!r}; "
                                      f"expected one of {FILL_MODES}.")
        if interpolation not in INTERPOLATIONS:
            raise NotImplementedError(f"{type(self).__name__}: unknown interpolation "
                                      f"{interpolation!r}; expected one of {INTERPOLATIONS}.")
        super().__init__(seed, **kwargs)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _sizes(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        shape = _a.shape(images)
        return shape[0], _m.cast(shape[1], _dt.float32), _m.cast(shape[2], _dt.float32)

    def _apply(self, images: Tensor, matrices: Tensor) -> Tensor:
        return transform(images, matrices, self.interpolation, self.fill_mode, self.fill_value)

    def get_config(self) -> dict:
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


@serialization.register
class RandomRotation(_Transforming):
    """While training, rotates each image by a random angle in ``factor * 2 pi`` (a number
    ``f``: ``[-f, f]`` turns; a pair: ``[lower, upper]``) about its center.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.RandomRotation(0.1, seed=2)
    >>> layer(tf.ones([2, 4, 4, 1]), training=True).shape
    TensorShape([2, 4, 4, 1])
    """

    def __init__(self, factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self.lower, self.upper = _factor_range("RandomRotation", "factor", factor)

    def _augment(self, images: Tensor) -> Tensor:
        batch, h, w = self._sizes(images)
        angles = self._uniform(_a.stack([batch]), self.lower * 2 * math.pi,
                               self.upper * 2 * math.pi)
        return self._apply(images, rotation_matrix(angles, h, w))

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


@serialization.register
class RandomZoom(_Transforming):
    """While training, zooms each image by a random factor: ``height_factor`` ``f`` (or a
    pair) draws the vertical zoom from ``[1 + lower, 1 + upper]`` (positive values zoom out);
    ``width_factor`` likewise, or None to keep the aspect ratio.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomZoom(0.2, seed=2)(tf.ones([2, 4, 4, 1]), training=True).shape
    TensorShape([2, 4, 4, 1])
    """

    def __init__(self, height_factor: Any, width_factor: Any = None,
                 fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = _factor_range("RandomZoom", "height_factor", height_factor, -1.0)
        self.width_range = None if width_factor is None else \
            _factor_range("RandomZoom", "width_factor", width_factor, -1.0)

    def _augment(self, images: Tensor) -> Tensor:
        batch, h, w = self._sizes(images)
        zoom_y = self._uniform(_a.stack([batch]), 1.0 + self.height_range[0],
                               1.0 + self.height_range[1])
        zoom_x = zoom_y if self.width_range is None else self._uniform(
            _a.stack([batch]), 1.0 + self.width_range[0], 1.0 + self.width_range[1])
        return self._apply(images, zoom_matrix(zoom_x, zoom_y, h, w))

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


@serialization.register
class RandomTranslation(_Transforming):
    """While training, shifts each image by random fractions of its height and width
    (``height_factor``/``width_factor``: a number ``f`` for ``[-f, f]``, or a pair, within
    [-1, 1]).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.RandomTranslation(0.2, 0.2, seed=2)
    >>> layer(tf.ones([2, 4, 4, 1]), training=True).shape
    TensorShape([2, 4, 4, 1])
    """

    def __init__(self, height_factor: Any, width_factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = _factor_range("RandomTranslation", "height_factor",
                                          height_factor, -1.0, 1.0)
        self.width_range = _factor_range("RandomTranslation", "width_factor", width_factor,
                                         -1.0, 1.0)

    def _augment(self, images: Tensor) -> Tensor:
        batch, h, w = self._sizes(images)
        dy = _m.multiply(self._uniform(_a.stack([batch]), *self.height_range), h)
        dx = _m.multiply(self._uniform(_a.stack([batch]), *self.width_range), w)
        return self._apply(images, translation_matrix(dx, dy))

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class _RandomSize(_RandomLayer):
    """``RandomHeight``/``RandomWidth``: while training, resizes one axis of the batch by a
    random factor from ``[1 + lower, 1 + upper]`` (``factor``: a number ``f`` for
    ``[-f, f]``, or a pair; lower bound >= -1)."""

    _axis = 1

    def __init__(self, factor: Any, interpolation: str = "bilinear", seed: int | None = None,
                 **kwargs: Any):
        super().__init__(seed, **kwargs)
        self.factor, self.interpolation = factor, interpolation
        self.lower, self.upper = _factor_range(type(self).__name__, "factor", factor, -1.0)

    def _augment(self, images: Tensor) -> Tensor:
        shape = _a.shape(images)
        scale = self._uniform([], 1.0 + self.lower, 1.0 + self.upper)
        size = _m.cast(_m.multiply(scale, _m.cast(shape[self._axis], _dt.float32)), _dt.int32)
        new = [size, shape[2]] if self._axis == 1 else [shape[1], size]
        return _resize.resize(images, _a.stack(new), method=self.interpolation)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "interpolation": self.interpolation}


@serialization.register
class RandomHeight(_RandomSize):
    """While training, resizes the height of the batch by a random factor (see
    ``_RandomSize``); the width is kept.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomHeight((0.5, 0.5))(tf.ones([1, 4, 3, 1]), training=True).shape
    TensorShape([1, 6, 3, 1])
    """

    _axis = 1


@serialization.register
class RandomWidth(_RandomSize):
    """While training, resizes the width of the batch by a random factor; the height is
    kept.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomWidth((-0.5, -0.5))(tf.ones([1, 4, 4, 1]), training=True).shape
    TensorShape([1, 4, 2, 1])
    """

    _axis = 2


@serialization.register
class RandomContrast(_RandomLayer):
    """While training, scales each image's deviation from its per-channel mean by a random
    factor in ``[1 - lower, 1 + upper]`` (``factor``: a number or a pair), then clips to
    ``[0, 255]`` as Keras does.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomContrast(0.5)(tf.ones([1, 2, 2, 1])).numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, factor: Any, seed: int | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        self.factor = factor
        if isinstance(factor, (list, tuple)):
            lower, upper = _factor_range("RandomContrast", "factor", factor, 0.0)
        else:
            lower, upper = _factor_range("RandomContrast", "factor", factor)
            lower = -lower
        if lower > 1.0:
            raise ValueError(f"RandomContrast: the lower factor must be in [0, 1]; got "
                             f"{factor!r}.")
        self.lower, self.upper = lower, upper

    def _augment(self, images: Tensor) -> Tensor:
        batch = _a.shape(images)[0]
        scale = _a.reshape(self._uniform(_a.stack([batch]), 1.0 - self.lower,
                                         1.0 + self.upper), [-1, 1, 1, 1])
        mean = _m.reduce_mean(images, axis=[1, 2], keepdims=True)
        out = _m.add(_m.multiply(_m.subtract(images, mean), _m.cast(scale, images.dtype)), mean)
        return _m.clip_by_value(out, 0.0, 255.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


@serialization.register
class RandomBrightness(_RandomLayer):
    """While training, adds to each image a random delta drawn from ``factor`` (a number
    ``f`` for ``[-f, f]``, or a pair, within [-1, 1]) times the width of ``value_range``,
    then clips to ``value_range``.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.RandomBrightness(0.2)
    >>> layer(tf.ones([1, 2, 2, 1]), training=False).numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, factor: Any, value_range: Any = (0, 255), seed: int | None = None,
                 **kwargs: Any):
        super().__init__(seed, **kwargs)
        self.factor = factor
        self.lower, self.upper = _factor_range("RandomBrightness", "factor", factor, -1.0, 1.0)
        if not isinstance(value_range, (list, tuple)) or len(value_range) != 2 or \
                value_range[0] >= value_range[1]:
            raise ValueError(f"RandomBrightness: value_range must be (low, high) with low < "
                             f"high; got {value_range!r}.")
        self.value_range = [float(v) for v in value_range]

    def _augment(self, images: Tensor) -> Tensor:
        low, high = self.value_range
        batch = _a.shape(images)[0]
        delta = _m.multiply(self._uniform(_a.stack([batch]), self.lower, self.upper),
                            high - low)
        out = _m.add(images, _m.cast(_a.reshape(delta, [-1, 1, 1, 1]), images.dtype))
        return _m.clip_by_value(out, low, high)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


# ----------------------------------------------------------------- numeric encodings
_OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count")


def _encode(indices: Tensor, depth: int, mode: str, dtype: _dt.DType,
            count_weights: Any = None) -> Tensor:
    """Keras's ``CategoryEncoding`` of integer ``indices`` into ``depth`` slots: one-hot per
    index, or one vector per sample (multi-hot: presence; count: occurrences, weighted)."""
    rank = indices.shape.rank
    if mode == "one_hot":
        if rank is not None and rank >= 2 and indices.shape[-1] == 1:
            indices = _a.squeeze(indices, [-1])
        return _a.one_hot(indices, depth, dtype=dtype)
    hot = _a.one_hot(indices, depth, dtype=dtype)  # (..., k, depth): reduce over k
    if mode == "multi_hot":
        return _m.reduce_max(hot, axis=-2)
    if count_weights is not None:
        weights = _m.cast(convert_to_tensor(count_weights), dtype)
        hot = _m.multiply(hot, _a.expand_dims(weights, -1))
    return _m.reduce_sum(hot, axis=-2)


@serialization.register
class CategoryEncoding(Layer):
    """Encodes integer indices in ``[0, num_tokens)``: ``'one_hot'`` (each index its own
    vector), ``'multi_hot'`` (default; one vector per sample marking the indices present)
    or ``'count'`` (occurrences; ``count_weights`` weights them). A rank-1 input is one
    sample for multi-hot and count, a batch of indices for one-hot.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.CategoryEncoding(num_tokens=4, output_mode="count")
    >>> layer(tf.constant([[0, 1, 1], [3, 3, 2]])).numpy().tolist()
    [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0]]
    """

    def __init__(self, num_tokens: int | None = None, output_mode: str = "multi_hot",
                 sparse: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(f"CategoryEncoding: num_tokens must be a positive integer; got "
                             f"{num_tokens!r}.")
        if output_mode not in _OUTPUT_MODES[1:]:
            raise ValueError(f"CategoryEncoding: unknown output_mode {output_mode!r}; expected "
                             f"one of {_OUTPUT_MODES[1:]}.")
        if sparse:
            raise ValueError("CategoryEncoding: sparse=True is not supported (no SparseTensor); "
                             "use the default dense output.")
        self.num_tokens, self.output_mode = num_tokens, output_mode

    def call(self, inputs: Tensor, count_weights: Any = None) -> Tensor:
        indices = _m.cast(inputs, _dt.int64)
        _check_indices(indices, self.num_tokens, self.name)
        return _encode(indices, self.num_tokens, self.output_mode, self._dtype, count_weights)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": False}


def _check_indices(indices: Tensor, depth: int, name: str) -> None:
    """Keras asserts the indices lie in ``[0, depth)`` (one_hot would silently zero them)."""
    check_ops.assert_less(indices, _m.cast(depth, indices.dtype),
                          message=f"{name}: input values must be in [0, num_tokens={depth})")
    check_ops.assert_non_negative(indices, message=f"{name}: input values must be >= 0")


# The approximate quantile summaries Keras's Discretization.adapt keeps: rows of values
# and weights, compressed to about 1/epsilon buckets.
def _summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    values = np.sort(values.reshape(-1))
    increment = values.size / (1.0 / epsilon)
    step = max(increment, 1)
    picked = values[int(increment)::int(step)]
    return np.stack([picked, np.ones_like(picked) * step])


def _compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum_weights = summary[1].cumsum()
    cum_percents = cum_weights / cum_weights[-1]
    new_bins = np.interp(percents, cum_percents, summary[0])
    cum_weights = np.interp(percents, cum_percents, cum_weights)
    new_weights = cum_weights - np.concatenate(([0], cum_weights[:-1]))
    return np.stack((new_bins, new_weights)).astype("float32")


def _merge(a: np.ndarray, b: np.ndarray, epsilon: float) -> np.ndarray:
    merged = np.concatenate((a, b), axis=1)
    merged = np.take(merged, np.argsort(merged[0]), axis=1)
    return _compress(merged, epsilon)


@serialization.register
class Discretization(Layer):
    """Buckets numbers by ``bin_boundaries`` (bucket ``i`` holds ``boundaries[i-1] <= x <
    boundaries[i]``), or by ``num_bins`` quantile boundaries that ``adapt`` learns from data
    (Keras's approximate quantiles, within ``epsilon``). ``output_mode``: ``'int'`` (bucket
    indices, int64), ``'one_hot'``, ``'multi_hot'`` or ``'count'``.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Discretization(bin_boundaries=[0., 1., 2.])
    >>> layer(tf.constant([[-1.5, 0.0, 1.5, 9.0]])).numpy().tolist()
    [[0, 1, 2, 3]]
    """

    def __init__(self, bin_boundaries: Any = None, num_bins: int | None = None,
                 epsilon: float = 0.01, output_mode: str = "int", sparse: bool = False,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Discretization: unknown output_mode {output_mode!r}; expected "
                             f"one of {_OUTPUT_MODES}.")
        if sparse:
            raise ValueError("Discretization: sparse=True is not supported (no SparseTensor).")
        if (bin_boundaries is None) == (num_bins is None):
            raise ValueError("Discretization: pass exactly one of bin_boundaries (fixed "
                             "buckets) and num_bins (learned by adapt).")
        if num_bins is not None and (isinstance(num_bins, bool) or not isinstance(num_bins, int)
                                     or num_bins < 1):
            raise ValueError(f"Discretization: num_bins must be a positive integer; got "
                             f"{num_bins!r}.")
        self.bin_boundaries = None if bin_boundaries is None else \
            [float(b) for b in bin_boundaries]
        if self.bin_boundaries is not None and sorted(self.bin_boundaries) != \
                self.bin_boundaries:
            raise ValueError(f"Discretization: bin_boundaries must be sorted; got "
                             f"{self.bin_boundaries}.")
        self.num_bins, self.epsilon, self.output_mode = num_bins, float(epsilon), output_mode

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Learns ``num_bins - 1`` quantile boundaries from ``data`` (an array, a tensor or a
        dataset of batches), batch by batch like Keras's streaming summary."""
        if self.num_bins is None:
            raise ValueError("Discretization.adapt needs num_bins (the layer was given fixed "
                             "bin_boundaries).")
        batches = [np.asarray(b.numpy(), np.float64) for b in data] \
            if isinstance(data, Dataset) else \
            [np.asarray(data.numpy() if hasattr(data, "numpy") else data, np.float64)]
        summary = np.zeros((2, 0))
        for batch in batches:
            summary = _merge(_summarize(batch, self.epsilon), summary, self.epsilon)
        self.bin_boundaries = [float(b) for b in _compress(summary, 1.0 / self.num_bins)[0, :-1]]

    def call(self, inputs: Tensor) -> Tensor:
        if self.bin_boundaries is None:
            raise ValueError(f"{self.name}: call adapt(data) first, to learn the bin "
                             f"boundaries (or pass bin_boundaries).")
        x = inputs if inputs.dtype.is_floating else _m.cast(inputs, _dt.float64)
        edges = convert_to_tensor(np.asarray(self.bin_boundaries, x.dtype.np))
        flat = _a.reshape(x, [-1])
        buckets = _a.reshape(_seg.searchsorted(edges, flat, side="right", out_type=_dt.int64),
                             _a.shape(x))
        if self.output_mode == "int":
            return buckets
        return _encode(buckets, len(self.bin_boundaries) + 1, self.output_mode, self._dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": None if self.bin_boundaries is not None else self.num_bins,
                "epsilon": self.epsilon, "output_mode": self.output_mode, "sparse": False}


# ------------------------------------------------------------- Keras 3's color layers
def _value_range(layer: str, value_range: Any) -> list[float]:
    if not isinstance(value_range, (list, tuple)) or len(value_range) != 2 or \
            value_range[0] >= value_range[1]:
        raise ValueError(f"{layer}: value_range must be (low, high) with low < high; got "
                         f"{value_range!r}.")
    return [float(v) for v in value_range]


def _per_image(layer: _RandomLayer, images: Tensor, probability: float) -> Tensor:
    """A ``(batch, 1, 1, 1)`` boolean: which images an augmentation applies to."""
    draw = layer._uniform(_a.stack([_a.shape(images)[0]]), 0.0, 1.0)
    return _a.reshape(_m.less(draw, probability), [-1, 1, 1, 1])


@serialization.register
class RandomGrayscale(_RandomLayer):
    """While training, turns each image gray with probability ``factor`` (TensorFlow's
    ``rgb_to_grayscale`` weights), keeping its 3 channels.

    >>> import stagecraft as tf
    >>> img = tf.constant([[[[1., 0., 0.]]]])
    >>> out = tf.keras.layers.RandomGrayscale(factor=1.0)(img)
    >>> [round(float(v), 4) for v in out.numpy().ravel()]
    [0.2989, 0.2989, 0.2989]
    """

    def __init__(self, factor: float = 0.5, data_format: str | None = None,
                 seed: int | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        if not 0 <= float(factor) <= 1:
            raise ValueError(f"RandomGrayscale: factor must be in [0, 1]; got {factor!r}.")
        if data_format not in (None, "channels_last"):
            raise ValueError(f"RandomGrayscale: only data_format='channels_last' is supported; "
                             f"got {data_format!r}.")
        self.factor = float(factor)

    def _augment(self, images: Tensor) -> Tensor:
        if images.shape[-1] != 3:
            raise ValueError(f"RandomGrayscale expects RGB images (3 channels); got shape "
                             f"{images.shape}.")
        gray = _color.rgb_to_grayscale(images)
        gray = _m.multiply(gray, _m.add(_m.multiply(images, 0.0), 1.0))  # back to 3 channels
        return _m.where(_per_image(self, images, self.factor), gray, images)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


@serialization.register
class RandomInvert(_RandomLayer):
    """While training, inverts each image with probability ``factor``: ``low + high - x`` for
    ``value_range=(low, high)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RandomInvert()(tf.constant([[[[0.], [200.]]]])).numpy().ravel().tolist()
    [255.0, 55.0]
    """

    def __init__(self, factor: float = 1.0, value_range: Any = (0, 255),
                 seed: int | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        if not 0 <= float(factor) <= 1:
            raise ValueError(f"RandomInvert: factor must be in [0, 1]; got {factor!r}.")
        self.factor = float(factor)
        self.value_range = _value_range("RandomInvert", value_range)

    def _augment(self, images: Tensor) -> Tensor:
        low, high = self.value_range
        inverted = _m.subtract(low + high, images)
        return _m.where(_per_image(self, images, self.factor), inverted, images)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@serialization.register
class AutoContrast(Layer):
    """Stretches each image's channels to the full ``value_range``: per image and channel,
    ``(x - min) / (max - min)`` rescaled (a constant channel is left as it was). Not random:
    the same in training and inference.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AutoContrast()(tf.constant([[[[50.], [100.]]]])).numpy().ravel().tolist()
    [0.0, 255.0]
    """

    def __init__(self, value_range: Any = (0, 255), **kwargs: Any):
        super().__init__(**kwargs)
        self.value_range = _value_range("AutoContrast", value_range)

    def _stretch(self, images: Tensor) -> Tensor:
        low_v, high_v = self.value_range
        x = _m.multiply(_m.subtract(images, low_v), 255.0 / (high_v - low_v))
        low = _m.reduce_min(x, axis=[1, 2], keepdims=True)
        high = _m.reduce_max(x, axis=[1, 2], keepdims=True)
        span = _m.subtract(high, low)
        constant = _m.equal(span, 0.0)
        scale = _m.truediv(255.0, _m.where(constant, _m.add(span, 1.0), span))
        out = _m.clip_by_value(_m.subtract(_m.multiply(x, scale), _m.multiply(low, scale)),
                               0.0, 255.0)
        out = _m.add(_m.multiply(out, (high_v - low_v) / 255.0), low_v)
        # Keras keeps channels it cannot stretch (constant ones, NaNs) as they were.
        keep = _m.logical_or(_m.is_nan(out), constant)
        return _m.where(keep, images, out)

    def call(self, inputs: Tensor) -> Tensor:
        return _batched(self._stretch, _m.cast(inputs, self._dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "value_range": self.value_range}


@serialization.register
class Pipeline(Layer):
    """Applies ``layers`` one after the other (Keras 3's preprocessing pipeline); the
    ``training`` flag reaches each.

    >>> import stagecraft as tf
    >>> pipe = tf.keras.layers.Pipeline([tf.keras.layers.Rescaling(2.0),
    ...                                  tf.keras.layers.Rescaling(1.0, offset=1.0)])
    >>> pipe(tf.constant([1., 2.])).numpy().tolist()
    [3.0, 5.0]
    """

    def __init__(self, layers: list, **kwargs: Any):
        super().__init__(**kwargs)
        self.layers = list(layers)

    def call(self, inputs: Any, training: Any = True) -> Any:
        for layer in self.layers:
            inputs = layer(inputs, training=training)
        return inputs

    def get_config(self) -> dict:
        return {**super().get_config(),
                "layers": [serialization.serialize(layer) for layer in self.layers]}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Pipeline":
        config = dict(config)
        config["layers"] = [serialization.deserialize(c, custom_objects)
                            for c in config["layers"]]
        return cls(**config)


__all__ += ["AutoContrast", "Pipeline", "RandomGrayscale", "RandomInvert"]
