"""Regularization layers (active only while training, the identity otherwise):
``SpatialDropout1D/2D/3D`` (drop whole channels), ``GaussianNoise``, ``GaussianDropout``,
``AlphaDropout`` (keeps SELU networks' mean and variance), and ``ActivityRegularization``
(adds an L1/L2 penalty on its inputs to the model's losses)."""
from __future__ import annotations

import math
from typing import Any

from stagecraft import random as _random
from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.basic_layers import Dropout
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["ActivityRegularization", "AlphaDropout", "GaussianDropout", "GaussianNoise",
           "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]


def _check_rate(layer: str, rate: Any) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
        raise ValueError(f"{layer}: rate must be a number in [0, 1); got {rate!r}.")
    return float(rate)


class _SpatialDropout(Dropout):
    """Dropout whose mask is shared over the spatial axes: one draw per example and
    channel, so whole feature maps are dropped (Tompson et al., 2015)."""

    _rank = 3

    def __init__(self, rate: float, data_format: str | None = None, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(_check_rate(type(self).__name__, rate), seed=seed, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{type(self).__name__}: data_format must be 'channels_last' or "
                             f"'channels_first'; got {data_format!r}.")
        self.data_format = data_format or "channels_last"

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if inputs.shape.rank != self._rank:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self._rank}; got "
                             f"shape {inputs.shape}.")
        if not training or self.rate == 0:
            return inputs
        dims = _a.unstack(_a.shape(inputs))
        one = _m.add(_m.multiply(dims[0], 0), 1)
        if self.data_format == "channels_last":
            noise = [dims[0]] + [one] * (self._rank - 2) + [dims[-1]]
        else:
            noise = [dims[0], dims[1]] + [one] * (self._rank - 2)
        return _nn.dropout(inputs, self.rate, noise_shape=_a.stack(noise), seed=self.seed)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("noise_shape")
        return {**config, "data_format": self.data_format}


@serialization.register
class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of ``(batch, steps, channels)`` inputs while training.

    >>> import stagecraft as tf
    >>> y = tf.keras.layers.SpatialDropout1D(0.5, seed=3)(tf.ones([1, 4, 8]), training=True)
    >>> all(len(set(col)) == 1 for col in y.numpy()[0].T.tolist())  # per channel: all or none
    True
    """

    _rank = 3

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any):
        super().__init__(rate, None, seed, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("data_format")
        return config


@serialization.register
class SpatialDropout2D(_SpatialDropout):
    """Drops whole channels of 4D (image) inputs while training.

    >>> import stagecraft as tf
    >>> tf.keras.layers.SpatialDropout2D(0.5)(tf.ones([1, 2, 2, 3])).shape
    TensorShape([1, 2, 2, 3])
    """

    _rank = 4


@serialization.register
class SpatialDropout3D(_SpatialDropout):
    """Drops whole channels of 5D (volume) inputs while training.

    >>> import stagecraft as tf
    >>> tf.keras.layers.SpatialDropout3D(0.5)(tf.ones([1, 2, 2, 2, 3])).shape
    TensorShape([1, 2, 2, 2, 3])
    """

    _rank = 5


@serialization.register
class GaussianNoise(Layer):
    """Adds zero-mean Gaussian noise of standard deviation ``stddev`` while training.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.GaussianNoise(0.1, seed=1)
    >>> layer(tf.ones([3])).numpy().tolist()  # not training: unchanged
    [1.0, 1.0, 1.0]
    """

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(stddev, bool) or not isinstance(stddev, (int, float)) or stddev < 0:
            raise ValueError(f"GaussianNoise: stddev must be a number >= 0; got {stddev!r}.")
        self.stddev, self.seed = float(stddev), seed

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if not training or self.stddev == 0:
            return inputs
        noise = _random.normal(_a.shape(inputs), 0.0, self.stddev, dtype=inputs.dtype,
                               seed=self.seed)
        return _m.add(inputs, noise)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


@serialization.register
class GaussianDropout(Layer):
    """Multiplies the inputs by Gaussian noise of mean 1 and standard deviation
    ``sqrt(rate / (1 - rate))`` while training.

    >>> import stagecraft as tf
    >>> tf.keras.layers.GaussianDropout(0.2)(tf.ones([2])).numpy().tolist()
    [1.0, 1.0]
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate("GaussianDropout", rate), seed

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if not training or self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = _random.normal(_a.shape(inputs), 1.0, stddev, dtype=inputs.dtype,
                               seed=self.seed)
        return _m.multiply(inputs, noise)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


_SELU_ALPHA_P = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


@serialization.register
class AlphaDropout(Layer):
    """Dropout for SELU networks (Klambauer et al., 2017): dropped inputs are set to SELU's
    negative saturation ``alpha'``, then ``a * x + b`` restores the mean and variance, with
    ``a = ((1 - rate) * (1 + rate * alpha'^2))^-0.5`` and ``b = -a * alpha' * rate``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.AlphaDropout(0.2)(tf.ones([2])).numpy().tolist()
    [1.0, 1.0]
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate("AlphaDropout", rate), seed
        self.noise_shape = None if noise_shape is None else list(noise_shape)

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if not training or self.rate == 0:
            return inputs
        shape = _a.shape(inputs)
        if self.noise_shape is not None:
            dims = _a.unstack(shape)
            shape = _a.stack([d if n is None else _m.multiply(d, 0) + int(n)
                              for n, d in zip(self.noise_shape, dims)])
        kept = _m.cast(_m.greater_equal(_random.uniform(shape, dtype=inputs.dtype,
                                                        seed=self.seed), self.rate),
                       inputs.dtype)
        a = ((1.0 - self.rate) * (1.0 + self.rate * _SELU_ALPHA_P ** 2)) ** -0.5
        b = -a * _SELU_ALPHA_P * self.rate
        x = _m.add(_m.multiply(inputs, kept), _m.multiply(_m.subtract(1.0, kept), _SELU_ALPHA_P))
        return _m.add(_m.multiply(x, a), b)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


@serialization.register
class ActivityRegularization(Layer):
    """Passes its inputs through and adds ``l1 * sum(|x|) + l2 * sum(x^2)`` to the model's
    ``losses`` (Keras 3, TensorFlow 2.16+; Keras 2 divided it by the batch size).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.ActivityRegularization(l1=0.5)
    >>> _ = layer(tf.constant([[1., -3.], [0., 0.]])); [float(v) for v in layer.losses]
    [2.0]
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        for what, value in (("l1", l1), ("l2", l2)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"ActivityRegularization: {what} must be a number >= 0; got "
                                 f"{value!r}.")
        self.l1, self.l2 = float(l1), float(l2)

    def call(self, inputs: Tensor) -> Tensor:
        penalty = _m.multiply(_m.reduce_sum(inputs), 0.0)
        if self.l1:
            penalty = _m.add(penalty, _m.multiply(self.l1, _m.reduce_sum(_m.abs(inputs))))
        if self.l2:
            penalty = _m.add(penalty, _m.multiply(self.l2, _m.reduce_sum(_m.square(inputs))))
        self.add_loss(penalty)
        return inputs

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
