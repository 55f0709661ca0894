"""Adaptive pooling layers (Keras 3's ``AdaptiveAveragePooling1D/2D/3D`` and
``AdaptiveMaxPooling1D/2D/3D``): pool to a fixed ``output_size`` whatever the input's size.
Output position ``i`` of an axis of length ``n`` pools the input range ``[floor(i n / out),
ceil((i + 1) n / out))`` (PyTorch's bins, which Keras follows); pooling is separable, so each
spatial axis is pooled in turn."""
from __future__ import annotations

import math
from typing import Any, Callable

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.conv_layers import normalize_data_format
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D"]


def _pool_axis(x: Tensor, axis: int, out: int, reduce: Callable[..., Tensor]) -> Tensor:
    n = x.shape[axis]
    pieces = []
    for i in range(out):
        start, end = (i * n) // out, math.ceil((i + 1) * n / out)
        index = (slice(None),) * axis + (slice(start, end),)
        pieces.append(reduce(x[index], axis=axis, keepdims=True))
    return _a.concat(pieces, axis)


class _AdaptivePooling(Layer):
    rank = 2
    _reduce: Callable[..., Tensor]

    def __init__(self, output_size: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        sizes = [output_size] * self.rank if isinstance(output_size, int) else list(output_size)
        if len(sizes) != self.rank or not all(isinstance(s, int) and not isinstance(s, bool)
                                              and s > 0 for s in sizes):
            raise ValueError(f"{type(self).__name__}: output_size must be a positive integer or "
                             f"a tuple of {self.rank}; got {output_size!r}.")
        self.output_size = tuple(sizes)
        self.data_format = normalize_data_format(data_format, type(self).__name__)

    def call(self, inputs: Tensor) -> Tensor:
        if inputs.shape.rank != self.rank + 2:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self.rank + 2}; "
                             f"got shape {inputs.shape}.")
        first = 1 if self.data_format == "channels_last" else 2
        x = inputs
        for k, out in enumerate(self.output_size):
            axis = first + k
            if x.shape[axis] is None:
                raise ValueError(f"{type(self).__name__} needs the spatial sizes of its input "
                                 f"known; axis {axis} of {inputs.shape} is not.")
            x = _pool_axis(x, axis, out, type(self)._reduce)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "output_size": list(self.output_size),
                "data_format": self.data_format}


class _Average(_AdaptivePooling):
    _reduce = staticmethod(_m.reduce_mean)


class _Max(_AdaptivePooling):
    _reduce = staticmethod(_m.reduce_max)


@serialization.register
class AdaptiveAveragePooling1D(_Average):
    """Averages ``(batch, steps, channels)`` inputs into ``output_size`` steps.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(5, dtype=tf.float32), [1, 5, 1])
    >>> tf.keras.layers.AdaptiveAveragePooling1D(2)(x).numpy().ravel().tolist()
    [1.0, 3.0]
    """
    rank = 1


@serialization.register
class AdaptiveAveragePooling2D(_Average):
    """Averages images into ``output_size`` (an int or ``(rows, cols)``) cells.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AdaptiveAveragePooling2D((2, 3))(tf.ones([1, 7, 9, 4])).shape
    TensorShape([1, 2, 3, 4])
    """
    rank = 2


@serialization.register
class AdaptiveAveragePooling3D(_Average):
    """Averages volumes into ``output_size`` cells.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AdaptiveAveragePooling3D(2)(tf.ones([1, 5, 5, 5, 1])).shape
    TensorShape([1, 2, 2, 2, 1])
    """
    rank = 3


@serialization.register
class AdaptiveMaxPooling1D(_Max):
    """The maximum of ``(batch, steps, channels)`` inputs over ``output_size`` bins.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(5, dtype=tf.float32), [1, 5, 1])
    >>> tf.keras.layers.AdaptiveMaxPooling1D(2)(x).numpy().ravel().tolist()
    [2.0, 4.0]
    """
    rank = 1


@serialization.register
class AdaptiveMaxPooling2D(_Max):
    """The maximum of images over ``output_size`` cells.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AdaptiveMaxPooling2D(1)(tf.ones([2, 3, 3, 1])).shape
    TensorShape([2, 1, 1, 1])
    """
    rank = 2


@serialization.register
class AdaptiveMaxPooling3D(_Max):
    """The maximum of volumes over ``output_size`` cells.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AdaptiveMaxPooling3D((1, 2, 2))(tf.ones([1, 3, 4, 4, 2])).shape
    TensorShape([1, 1, 2, 2, 2])
    """
    rank = 3
