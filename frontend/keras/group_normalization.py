"""Per-example normalization layers beyond ``LayerNormalization``: ``GroupNormalization``
(statistics over groups of channels, Wu and He 2018), ``UnitNormalization`` (unit L2 norm)
and ``RMSNormalization`` (divide by the root mean square, Zhang and Sennrich 2019), with
Keras's arguments, defaults and weight names."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.core_layers import BETA_GAMMA, set_weight_options, weight_options_config
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["GroupNormalization", "RMSNormalization", "UnitNormalization"]


def _feature_dim(layer: Layer, shape: TensorShape, axis: int) -> int:
    if shape.rank is None or not -shape.rank <= axis < shape.rank or shape[axis] is None:
        raise ValueError(f"{type(layer).__name__}: axis {axis} of the inputs (shape {shape}) "
                         f"must exist and have a known size.")
    return int(shape[axis])


@serialization.register
class GroupNormalization(Layer):
    """Splits the channels (``axis``) into ``groups`` and normalizes each example's groups
    by their own mean and variance (over the group's channels and every other non-batch
    axis): ``(x - mean) / sqrt(variance + epsilon) * gamma + beta``, ``gamma``/``beta`` per
    channel. ``groups=1`` is layer normalization over all features; ``groups = channels`` is
    instance normalization.

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.GroupNormalization(groups=2)(tf.constant([[1., 3., 10., 30.]]))
    >>> [round(v, 4) for v in out.numpy().ravel().tolist()]  # (x - mean) / sqrt(var + 1e-3)
    [-0.9995, 0.9995, -1.0, 1.0]
    """

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        set_weight_options(self, beta_regularizer=beta_regularizer,
                           gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                           gamma_constraint=gamma_constraint)
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"GroupNormalization: groups must be a positive integer; got "
                             f"{groups!r}.")
        self.groups, self.axis, self.epsilon = groups, int(axis), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        dim = _feature_dim(self, shape, self.axis)
        if dim % self.groups:
            raise ValueError(f"GroupNormalization: the number of groups ({self.groups}) must "
                             f"divide the number of channels ({dim}, axis {self.axis} of "
                             f"inputs of shape {shape}).")
        self.gamma = self.add_weight("gamma", [dim], initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", [dim], initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        rank = inputs.shape.rank
        axis = self.axis % rank
        dim = inputs.shape[axis]
        shape = _a.shape(inputs)
        dims = [shape[i] for i in range(rank)]
        grouped_dims = dims[:axis] + [self.groups, dim // self.groups] + dims[axis + 1:]
        grouped = _a.reshape(inputs, _a.stack(grouped_dims))
        reduce = [i for i in range(1, rank + 1) if i != axis]  # all but batch and group
        mean, variance = _nn.moments(grouped, reduce, keepdims=True)
        normalized = _m.multiply(_m.subtract(grouped, mean),
                                 _m.rsqrt(_m.add(variance, self.epsilon)))
        out = _a.reshape(normalized, shape)
        broadcast = [1] * rank
        broadcast[axis] = dim
        if self.gamma is not None:
            out = _m.multiply(out, _a.reshape(self.gamma, broadcast))
        if self.beta is not None:
            out = _m.add(out, _a.reshape(self.beta, broadcast))
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                **weight_options_config(self, *BETA_GAMMA)}


@serialization.register
class UnitNormalization(Layer):
    """Scales each example to unit L2 norm along ``axis`` (``tf.nn.l2_normalize``).

    >>> import stagecraft as tf
    >>> tf.keras.layers.UnitNormalization()(tf.constant([[3., 4.]])).numpy().tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """

    def __init__(self, axis: int | list = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else int(axis)

    def call(self, inputs: Tensor) -> Tensor:
        return _nn.l2_normalize(inputs, axis=self.axis, epsilon=1e-12)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


@serialization.register
class RMSNormalization(Layer):
    """``x / sqrt(mean(x^2, axis) + epsilon) * scale``, ``scale`` a learned weight over
    ``axis`` (ones at first).

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.RMSNormalization()(tf.constant([[3., 4.]]))
    >>> [round(v, 4) for v in out.numpy().ravel().tolist()]
    [0.8485, 1.1314]
    """

    def __init__(self, axis: int = -1, epsilon: float = 1e-6, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis, self.epsilon = int(axis), float(epsilon)

    def build(self, input_shape: Any) -> None:
        dim = _feature_dim(self, TensorShape(input_shape), self.axis)
        self.scale = self.add_weight("scale", [dim], initializer="ones")
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        rank = inputs.shape.rank
        mean_square = _m.reduce_mean(_m.square(inputs), axis=self.axis, keepdims=True)
        broadcast = [1] * rank
        broadcast[self.axis % rank] = -1
        return _m.multiply(_m.multiply(inputs, _m.rsqrt(_m.add(mean_square, self.epsilon))),
                           _a.reshape(self.scale, broadcast))

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
