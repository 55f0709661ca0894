"""Keras's pooling layers: ``MaxPooling1D/2D/3D``, ``AveragePooling1D/2D/3D`` (windows,
``tf.nn.max_pool``/``avg_pool``) and ``GlobalMaxPooling1D/2D/3D``,
``GlobalAveragePooling1D/2D/3D`` (a reduction over every spatial dim), with Keras's arguments,
defaults (``strides=None`` means ``pool_size``), configs and short aliases (``MaxPool2D``...)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.conv_layers import (_tf_format, normalize_data_format, normalize_padding,
                                          normalize_tuple)
from stagecraft.ops import math_ops as _m
from stagecraft.ops import pooling_ops as _pool

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
           "GlobalMaxPooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
           "GlobalAveragePooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D",
           "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D"]


def _check_rank(layer: Layer, inputs: Tensor, rank: int) -> None:
    if inputs.shape.rank != rank + 2:
        raise ValueError(f'Input 0 of layer "{layer.name}" is incompatible with the layer: '
                         f'expected ndim={rank + 2}, found ndim={inputs.shape.rank}. Full shape '
                         f'received: {inputs.shape}. {type(layer).__name__} takes (batch, '
                         f'{rank} spatial dims, channels) inputs.')


class _Pooling(Layer):
    """A windowed pooling of ``rank`` spatial dims with ``tf.nn`` op ``_op``."""

    rank = 2
    _op = "max_pool"

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size", cls)
        self.strides = self.pool_size if strides is None else \
            normalize_tuple(strides, self.rank, "strides", cls)
        self.padding = normalize_padding(padding, cls, ("valid", "same"))
        self.data_format = normalize_data_format(data_format, cls)

    def call(self, inputs: Tensor) -> Tensor:
        """Pools each window of ``pool_size`` moved by ``strides``."""
        _check_rank(self, inputs, self.rank)
        fn = _pool.max_pool if self._op == "max_pool" else _pool.avg_pool
        return fn(inputs, list(self.pool_size), list(self.strides), self.padding.upper(),
                  data_format=_tf_format(self.rank, self.data_format))

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class _GlobalPooling(Layer):
    """A reduction over every spatial dim (``keepdims`` keeps them as ones)."""

    rank = 2
    _reduce = staticmethod(_m.reduce_max)

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format, type(self).__name__)
        self.keepdims = bool(keepdims)

    def _spatial_axes(self) -> list[int]:
        start = 1 if self.data_format == "channels_last" else 2
        return list(range(start, start + self.rank))

    def call(self, inputs: Tensor) -> Tensor:
        """Reduces the spatial dims."""
        _check_rank(self, inputs, self.rank)
        return type(self)._reduce(inputs, axis=self._spatial_axes(), keepdims=self.keepdims)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


@serialization.register
class MaxPooling1D(_Pooling):
    """The maximum of each window of ``pool_size`` steps (``(batch, steps, channels)``).

    >>> import stagecraft as tf
    >>> x = tf.constant([[[1.0], [3.0], [2.0], [0.0]]])
    >>> tf.keras.layers.MaxPooling1D()(x).numpy().ravel().tolist()
    [3.0, 2.0]
    """

    rank = 1

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str = "channels_last", **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class MaxPooling2D(_Pooling):
    """The maximum of each ``pool_size`` window of images (``(batch, rows, cols,
    channels)``).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.MaxPooling2D(3, strides=2, padding="same")
    >>> layer(tf.ones([1, 5, 5, 2])).shape
    TensorShape([1, 3, 3, 2])
    """

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class MaxPooling3D(_Pooling):
    """The maximum of each ``pool_size`` window of volumes (``(batch, d1, d2, d3,
    channels)``).

    >>> import stagecraft as tf
    >>> tf.keras.layers.MaxPooling3D()(tf.ones([1, 4, 4, 4, 1])).shape
    TensorShape([1, 2, 2, 2, 1])
    """

    rank = 3

    def __init__(self, pool_size: Any = (2, 2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class AveragePooling1D(_Pooling):
    """The mean of each window of ``pool_size`` steps (with ``"same"``, over the window's
    real elements).

    >>> import stagecraft as tf
    >>> x = tf.constant([[[1.0], [3.0]]])
    >>> tf.keras.layers.AveragePooling1D()(x).numpy().ravel().tolist()
    [2.0]
    """

    rank = 1
    _op = "avg_pool"

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str = "channels_last", **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class AveragePooling2D(_Pooling):
    """The mean of each ``pool_size`` window of images.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AveragePooling2D()(tf.ones([1, 4, 4, 1])).shape
    TensorShape([1, 2, 2, 1])
    """

    _op = "avg_pool"

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class AveragePooling3D(_Pooling):
    """The mean of each ``pool_size`` window of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AveragePooling3D(padding="same")(tf.ones([1, 3, 3, 3, 1])).shape
    TensorShape([1, 2, 2, 2, 1])
    """

    rank = 3
    _op = "avg_pool"

    def __init__(self, pool_size: Any = (2, 2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


@serialization.register
class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps of ``(batch, steps, features)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalMaxPooling1D()(tf.constant([[[1.0], [3.0]]])).numpy().tolist()
    [[3.0]]
    """

    rank = 1

    def __init__(self, data_format: str = "channels_last", keepdims: bool = False,
                 **kwargs: Any):
        super().__init__(data_format, keepdims, **kwargs)


@serialization.register
class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over the rows and columns of images.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalMaxPooling2D(keepdims=True)(tf.ones([2, 3, 3, 4])).shape
    TensorShape([2, 1, 1, 4])
    """


@serialization.register
class GlobalMaxPooling3D(_GlobalPooling):
    """The maximum over the three spatial dims of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalMaxPooling3D()(tf.ones([2, 3, 3, 3, 4])).shape
    TensorShape([2, 4])
    """

    rank = 3


@serialization.register
class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps of ``(batch, steps, features)``; with a ``mask`` (batch,
    steps), over the unmasked steps only.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalAveragePooling1D()(tf.constant([[[1.0], [3.0]]])).numpy().tolist()
    [[2.0]]
    """

    rank = 1
    _reduce = staticmethod(_m.reduce_mean)

    def __init__(self, data_format: str = "channels_last", keepdims: bool = False,
                 **kwargs: Any):
        super().__init__(data_format, keepdims, **kwargs)

    def call(self, inputs: Tensor, mask: Any = None) -> Tensor:
        """The mean over the (unmasked) steps."""
        if mask is None:
            return super().call(inputs)
        _check_rank(self, inputs, 1)
        axis = self._spatial_axes()[0]
        weights = _m.cast(mask, inputs.dtype)
        weights = weights[:, :, None] if axis == 1 else weights[:, None, :]
        total = _m.reduce_sum(_m.multiply(inputs, weights), axis=axis, keepdims=self.keepdims)
        count = _m.reduce_sum(weights, axis=axis, keepdims=self.keepdims)
        return _m.truediv(total, count)


@serialization.register
class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over the rows and columns of images (the head of ResNet-50).

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalAveragePooling2D()(tf.ones([2, 7, 7, 8])).shape
    TensorShape([2, 8])
    """

    _reduce = staticmethod(_m.reduce_mean)


@serialization.register
class GlobalAveragePooling3D(_GlobalPooling):
    """The mean over the three spatial dims of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GlobalAveragePooling3D()(tf.ones([2, 3, 3, 3, 4])).shape
    TensorShape([2, 4])
    """

    rank = 3
    _reduce = staticmethod(_m.reduce_mean)


# Keras's short names: the same classes.
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (GlobalMaxPooling1D, GlobalMaxPooling2D,
                                                     GlobalMaxPooling3D)
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (GlobalAveragePooling1D,
                                                     GlobalAveragePooling2D,
                                                     GlobalAveragePooling3D)
