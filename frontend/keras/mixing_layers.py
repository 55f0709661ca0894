"""Keras 3's batch-mixing augmentations ``MixUp`` (Zhang et al., 2018) and ``CutMix`` (Yun
et al., 2019): while training, each image (and its label) is mixed with another image of
the batch (a random permutation), by a weight drawn from a Beta distribution. They take
images, or a dict ``{"images": ..., "labels": ...}`` (labels one-hot or soft), and return the
same structure; at inference they return their input unchanged."""
from __future__ import annotations

from typing import Any

from stagecraft import random as _random
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["CutMix", "MixUp"]


def _beta(shape: Any, alpha: float, seed: int | None) -> Tensor:
    """Beta(alpha, alpha) samples, as the ratio G1 / (G1 + G2) of two Gamma(alpha) draws."""
    g1 = _random.gamma(shape, alpha, seed=seed)
    g2 = _random.gamma(shape, alpha, seed=None if seed is None else seed + 1)
    return _m.truediv(g1, _m.add(g1, g2))


class _Mixing(Layer):
    """What MixUp and CutMix share: the input structure and the batch permutation."""

    def __init__(self, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seed = seed

    def call(self, inputs: Any, training: Any = True) -> Any:
        images = inputs["images"] if isinstance(inputs, dict) else inputs
        labels = inputs.get("labels") if isinstance(inputs, dict) else None
        if not training:
            return inputs
        if images.shape.rank != 4:
            raise ValueError(f"{type(self).__name__} mixes a batch of images (batch, height, "
                             f"width, channels); got shape {images.shape}.")
        batch = _a.shape(images)[0]
        order = _random.shuffle(_a.range(0, batch), seed=self.seed)
        images, weight = self._mix_images(images, _a.gather(images, order))
        if labels is None:
            return {**inputs, "images": images} if isinstance(inputs, dict) else images
        labels = _m.cast(labels, weight.dtype)
        w = _a.reshape(weight, [-1, 1])
        mixed = _m.add(_m.multiply(w, labels),
                       _m.multiply(_m.subtract(1.0, w), _a.gather(labels, order)))
        return {**inputs, "images": images, "labels": mixed}

    def _mix_images(self, images: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
        # the one hook MixUp and CutMix each define
        raise NotImplementedError(f"{type(self).__name__} must define _mix_images(images, other), "
                                  f"which returns the mixed images and the label weights.")

    def get_config(self) -> dict:
        return {**super().get_config(), "seed": self.seed}


@serialization.register
class MixUp(_Mixing):
    """While training, ``w * x + (1 - w) * x[perm]`` for images and labels alike, with ``w ~
    Beta(alpha, alpha)`` per example.

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.MixUp(seed=1)({"images": tf.ones([4, 2, 2, 3]),
    ...                                       "labels": tf.one_hot([0, 1, 0, 1], 2)})
    >>> out["images"].shape, [round(float(v), 4) for v in tf.reduce_sum(out["labels"], 1)]
    (TensorShape([4, 2, 2, 3]), [1.0, 1.0, 1.0, 1.0])
    """

    def __init__(self, alpha: float = 0.2, data_format: str | None = None,
                 seed: int | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        if not float(alpha) > 0:
            raise ValueError(f"MixUp: alpha must be positive; got {alpha!r}.")
        if data_format not in (None, "channels_last"):
            raise ValueError("MixUp: only data_format='channels_last' is supported.")
        self.alpha = float(alpha)

    def _mix_images(self, images: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
        weight = _beta(_a.stack([_a.shape(images)[0]]), self.alpha, self.seed)
        w = _m.cast(_a.reshape(weight, [-1, 1, 1, 1]), images.dtype)
        return _m.add(_m.multiply(w, images), _m.multiply(_m.subtract(1.0, w), other)), weight

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


@serialization.register
class CutMix(_Mixing):
    """While training, pastes into each image a box of another image of the batch: the box
    covers a fraction ``1 - lambda`` of the image (``lambda ~ Beta(factor, factor)``, sides
    ``sqrt(1 - lambda)`` of the image's) around a uniformly drawn center, clipped to the
    image; labels mix by the fraction of the image kept.

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.CutMix(seed=2)(tf.zeros([3, 8, 8, 1]))
    >>> out.shape
    TensorShape([3, 8, 8, 1])
    """

    def __init__(self, factor: float = 1.0, seed: int | None = None,
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(seed, **kwargs)
        if not float(factor) > 0:
            raise ValueError(f"CutMix: factor must be positive; got {factor!r}.")
        if data_format not in (None, "channels_last"):
            raise ValueError("CutMix: only data_format='channels_last' is supported.")
        self.factor = float(factor)

    def _mix_images(self, images: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
        shape = _a.shape(images)
        batch, height, width = shape[0], shape[1], shape[2]
        h, w = _m.cast(height, _dt.float32), _m.cast(width, _dt.float32)
        lam = _beta(_a.stack([batch]), self.factor, self.seed)
        ratio = _m.sqrt(_m.subtract(1.0, lam))
        cut_h, cut_w = _m.floor(_m.multiply(ratio, h)), _m.floor(_m.multiply(ratio, w))
        seed_x = None if self.seed is None else self.seed + 2
        center_y = _m.floor(_m.multiply(
            _random.uniform(_a.stack([batch]), 0.0, 1.0, seed=self.seed), h))
        center_x = _m.floor(_m.multiply(
            _random.uniform(_a.stack([batch]), 0.0, 1.0, seed=seed_x), w))
        top = _m.maximum(_m.subtract(center_y, _m.floor(_m.truediv(cut_h, 2.0))), 0.0)
        bottom = _m.minimum(_m.add(center_y, _m.floor(_m.truediv(cut_h, 2.0))), h)
        left = _m.maximum(_m.subtract(center_x, _m.floor(_m.truediv(cut_w, 2.0))), 0.0)
        right = _m.minimum(_m.add(center_x, _m.floor(_m.truediv(cut_w, 2.0))), w)
        rows = _a.reshape(_m.cast(_a.range(0, height), _dt.float32), [1, -1, 1, 1])
        cols = _a.reshape(_m.cast(_a.range(0, width), _dt.float32), [1, 1, -1, 1])

        def per_image(v: Tensor) -> Tensor:
            return _a.reshape(v, [-1, 1, 1, 1])
        inside = _m.logical_and(
            _m.logical_and(_m.greater_equal(rows, per_image(top)),
                           _m.less(rows, per_image(bottom))),
            _m.logical_and(_m.greater_equal(cols, per_image(left)),
                           _m.less(cols, per_image(right))))
        mixed = _m.where(inside, _m.add(_m.multiply(images, 0.0), other), images)
        # The label weight is the fraction of the image kept (after clipping the box).
        area = _m.multiply(_m.subtract(bottom, top), _m.subtract(right, left))
        kept = _m.subtract(1.0, _m.truediv(area, _m.multiply(h, w)))
        return mixed, kept

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}
