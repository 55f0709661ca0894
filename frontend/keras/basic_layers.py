"""Keras layers used around dense and recurrent ones: ``Dropout``, ``Embedding``,
``LayerNormalization`` and ``Normalization`` (feature-wise standardization learned by
``adapt``), with Keras's weights, defaults and formulas."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.data import Dataset
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import constraints, initializers, regularizers, serialization
from stagecraft.keras.core_layers import BETA_GAMMA, set_weight_options, weight_options_config
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["Dropout", "Embedding", "LayerNormalization", "Normalization"]


@serialization.register
class Dropout(Layer):
    """Zeros a fraction ``rate`` of the inputs and scales the rest by ``1 / (1 - rate)``
    while training (``training=True``, as ``fit`` passes it); the identity otherwise.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Dropout(0.5, seed=1)
    >>> layer(tf.ones([4])).numpy().tolist()  # not training: unchanged
    [1.0, 1.0, 1.0, 1.0]
    >>> sorted(set(layer(tf.ones([100]), training=True).numpy().tolist()))
    [0.0, 2.0]
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not 0 <= float(rate) < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1); got {rate}.")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if not training or self.rate == 0:
            return inputs
        noise = None
        if self.noise_shape is not None:  # None entries take the input's dimension
            dims = inputs.shape.as_list()
            noise = [d if n is None else n for n, d in zip(self.noise_shape, dims)]
        return _nn.dropout(inputs, self.rate, noise_shape=noise, seed=self.seed)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": None if self.noise_shape is None else list(self.noise_shape),
                "seed": self.seed}


@serialization.register
class Embedding(Layer):
    """Looks up rows of the ``(input_dim, output_dim)`` weight ``embeddings`` at integer
    indices (initialized uniformly in [-0.05, 0.05], Keras's default).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Embedding(10, 3)
    >>> layer(tf.constant([[1, 2], [3, 4]])).shape
    TensorShape([2, 2, 3])
    """

    def __init__(self, input_dim: int, output_dim: int,
                 embeddings_initializer: Any = "uniform", embeddings_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 input_length: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        for what, n in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                raise ValueError(f"Embedding: {what} must be a positive integer; got {n!r}.")
        if mask_zero:
            raise ValueError("Embedding: mask_zero=True is not supported (masks are not).")
        self.input_dim, self.output_dim = input_dim, output_dim
        self.embeddings_initializer = initializers.RandomUniform(-0.05, 0.05) \
            if embeddings_initializer == "uniform" else initializers.get(embeddings_initializer)

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight("embeddings", [self.input_dim, self.output_dim],
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def _convert_input(self, x: Any) -> Any:
        return convert_to_tensor(x)  # integer indices: no cast to the layer's float dtype

    def call(self, inputs: Tensor) -> Tensor:
        if inputs.dtype not in (_dt.int32, _dt.int64):
            inputs = _m.cast(inputs, _dt.int64)
        return _a.gather(self.embeddings, inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer":
                    regularizers.serialize_or_none(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize_or_none(self.embeddings_constraint)}


def _axes(axis: Any, rank: int) -> list[int]:
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted(a % rank for a in axes)


@serialization.register
class LayerNormalization(Layer):
    """Normalizes each example over ``axis``: ``(x - mean) / sqrt(variance + epsilon) *
    gamma + beta`` (``gamma``/``beta`` of the normalized axes' shape, ones and zeros).

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.LayerNormalization()(tf.constant([[1.0, 3.0]]))
    >>> [round(v, 4) for v in out.numpy().ravel().tolist()]  # (x - 2) / sqrt(1 + 1e-3)
    [-0.9995, 0.9995]
    """

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        set_weight_options(self, beta_regularizer=beta_regularizer,
                           gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                           gamma_constraint=gamma_constraint)
        self.axis, self.epsilon = axis, float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        axes = _axes(self.axis, shape.rank)
        dims = [shape[a] for a in axes]
        if None in dims:
            raise ValueError(f"{self.name}: the normalized axes {axes} need known sizes; got "
                             f"{shape}.")
        self.gamma = self.add_weight("gamma", dims, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", dims, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        rank = inputs.shape.rank
        axes = _axes(self.axis, rank)
        mean = _m.reduce_mean(inputs, axis=axes, keepdims=True)
        centered = _m.subtract(inputs, mean)
        variance = _m.reduce_mean(_m.square(centered), axis=axes, keepdims=True)
        out = _m.multiply(centered, _m.rsqrt(_m.add(variance, self.epsilon)))
        # gamma/beta broadcast along the normalized axes
        shape = [inputs.shape[a] if a in axes else 1 for a in range(rank)]
        if self.scale:
            out = _m.multiply(out, _a.reshape(self.gamma, shape))
        if self.center:
            out = _m.add(out, _a.reshape(self.beta, shape))
        return out

    def get_config(self) -> dict:
        return {**super().get_config(),
                "axis": self.axis if isinstance(self.axis, int) else list(self.axis),
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                **weight_options_config(self, *BETA_GAMMA)}


@serialization.register
class Normalization(Layer):
    """Standardizes features: ``(x - mean) / max(sqrt(variance), 1e-7)``, with the mean and
    variance given or learned from data by ``adapt`` (over every axis but ``axis``, the
    feature axes, default the last). ``invert=True`` maps back.

    >>> import numpy as np, stagecraft as tf
    >>> layer = tf.keras.layers.Normalization()
    >>> layer.adapt(np.array([[1.0], [3.0]]))
    >>> layer(np.array([[1.0], [5.0]])).numpy().ravel().tolist()
    [-1.0, 3.0]
    """

    def __init__(self, axis: Any = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: pass both mean and variance, or neither (and "
                             "call adapt).")
        self.axis = axis
        self.invert = bool(invert)
        self._given = None if mean is None else (np.asarray(mean, np.float64),
                                                 np.asarray(variance, np.float64))

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        axes = [] if self.axis is None else _axes(self.axis, shape.rank)
        self._stat_shape = [shape[a] if a in axes else 1 for a in range(shape.rank)]
        dims = [shape[a] for a in axes]
        self.mean = self.add_weight("mean", dims, initializer="zeros", trainable=False)
        self.variance = self.add_weight("variance", dims, initializer="ones", trainable=False)
        self.count = self.add_weight("count", [], dtype=_dt.int64, initializer="zeros",
                                     trainable=False)
        if self._given is not None:
            mean, variance = (np.broadcast_to(v, dims) for v in self._given)
            self.mean.assign(mean.astype(self._dtype.np))
            self.variance.assign(variance.astype(self._dtype.np))
        self.built = True

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Sets the mean and variance from ``data`` (arrays, tensors, or a dataset of
        batches), over every axis but the feature axes."""
        if isinstance(data, Dataset):
            values = np.concatenate([np.asarray(b.numpy()) for b in data])
        else:
            values = np.asarray(data.numpy() if hasattr(data, "numpy") else data, np.float64)
        if not self.built:
            self._maybe_build(convert_to_tensor(values.astype(self._dtype.np)))
        axes = [] if self.axis is None else _axes(self.axis, values.ndim)
        reduce = tuple(a for a in range(values.ndim) if a not in axes)
        dims = [values.shape[a] for a in axes]
        self.mean.assign(values.mean(axis=reduce).reshape(dims).astype(self._dtype.np))
        self.variance.assign(values.var(axis=reduce).reshape(dims).astype(self._dtype.np))
        self.count.assign(int(np.prod([values.shape[a] for a in reduce])))

    def call(self, inputs: Tensor) -> Tensor:
        mean = _a.reshape(self.mean, self._stat_shape)
        std = _m.maximum(_m.sqrt(_a.reshape(self.variance, self._stat_shape)), 1e-7)
        if self.invert:
            return _m.add(_m.multiply(inputs, std), mean)
        return _m.truediv(_m.subtract(inputs, mean), std)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "axis": self.axis if self.axis is None or isinstance(self.axis, int)
                else list(self.axis), "invert": self.invert}
