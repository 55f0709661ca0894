"""Activation layers with their own parameters: ``ReLU`` (``max_value``,
``negative_slope``, ``threshold``), ``LeakyReLU``, ``PReLU`` (a learned slope, shared along
``shared_axes``), ``ELU``, ``ThresholdedReLU`` and ``Softmax`` (with an optional mask), with
Keras's argument names, defaults and weight names."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import (activations, constraints, initializers, regularizers,
                              serialization)
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops import stable_math_ops as _stable

__all__ = ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax", "ThresholdedReLU"]


def _check_number(layer: str, what: str, value: Any, minimum: float | None = 0.0) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{layer}: {what} must be a number; got {value!r}.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{layer}: {what} must be >= {minimum}; got {value}.")
    return float(value)


@serialization.register
class ReLU(Layer):
    """``min(max_value, x)`` for ``x >= threshold``, ``negative_slope * (x - threshold)``
    below (Keras's ``ReLU`` layer).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.ReLU(max_value=6., negative_slope=0.5)
    >>> layer(tf.constant([-2., 3., 9.])).numpy().tolist()
    [-1.0, 3.0, 6.0]
    """

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.max_value = None if max_value is None else \
            _check_number("ReLU", "max_value", max_value)
        self.negative_slope = _check_number("ReLU", "negative_slope", negative_slope)
        self.threshold = _check_number("ReLU", "threshold", threshold, None)

    def call(self, inputs: Tensor) -> Tensor:
        return activations.relu(inputs, self.negative_slope, self.max_value, self.threshold)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


@serialization.register
class LeakyReLU(Layer):
    """``x`` for ``x >= 0``, ``negative_slope * x`` below (default slope 0.3, Keras's).
    ``alpha`` is the older name of ``negative_slope``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.LeakyReLU(negative_slope=0.5)(tf.constant([-2., 3.])).numpy().tolist()
    [-1.0, 3.0]
    """

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any):
        if "alpha" in kwargs:  # Keras 2's name
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _check_number("LeakyReLU", "negative_slope", negative_slope)

    def call(self, inputs: Tensor) -> Tensor:
        return _nn.leaky_relu(inputs, alpha=self.negative_slope)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


@serialization.register
class PReLU(Layer):
    """Parametric ReLU: ``x`` for ``x >= 0``, ``alpha * x`` below, ``alpha`` a learned weight
    (named ``alpha``) of the input's shape without the batch axis; ``shared_axes`` (1-based
    axes of the input) share one slope, e.g. ``[1, 2]`` for one slope per channel of an
    image.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.25),
    ...                               shared_axes=[1])
    >>> layer(tf.constant([[[-4., 2.], [1., -8.]]])).numpy().tolist(), layer.alpha.shape
    ([[[-1.0, 2.0], [1.0, -2.0]]], TensorShape([1, 2]))
    """

    def __init__(self, alpha_initializer: Any = "zeros", alpha_regularizer: Any = None,
                 alpha_constraint: Any = None, shared_axes: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        self.alpha_initializer = initializers.get(alpha_initializer)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = [shared_axes] if isinstance(shared_axes, int) else list(shared_axes)
            self.shared_axes = [int(a) for a in axes]

    def build(self, input_shape: Any) -> None:
        dims = TensorShape(input_shape).as_list()[1:]
        for axis in self.shared_axes or []:
            if not 1 <= axis <= len(dims):
                raise ValueError(f"PReLU: shared_axes entry {axis} is not an axis of inputs of "
                                 f"shape {tuple([None] + dims)} (axes count from 1, after the "
                                 f"batch axis).")
            dims[axis - 1] = 1
        if None in dims:
            raise ValueError(f"PReLU: the input's dimensions must be known to create alpha "
                             f"(got {tuple(dims)}); share the unknown axes with shared_axes.")
        self.alpha = self.add_weight("alpha", shape=dims, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        pos = _nn.relu(inputs)
        neg = _m.multiply(_m.negative(self.alpha), _nn.relu(_m.negative(inputs)))
        return _m.add(pos, neg)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize_or_none(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize_or_none(self.alpha_constraint),
                "shared_axes": self.shared_axes}


@serialization.register
class ELU(Layer):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below.

    >>> import stagecraft as tf
    >>> out = tf.keras.layers.ELU(alpha=2.)(tf.constant([-1., 1.]))
    >>> [round(v, 4) for v in out.numpy().tolist()]
    [-1.2642, 1.0]
    """

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = _check_number("ELU", "alpha", alpha, None)

    def call(self, inputs: Tensor) -> Tensor:
        return activations.elu(inputs, self.alpha)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


@serialization.register
class ThresholdedReLU(Layer):
    """``x`` where ``x > theta``, 0 elsewhere.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ThresholdedReLU(theta=1.)(tf.constant([0.5, 2.])).numpy().tolist()
    [0.0, 2.0]
    """

    def __init__(self, theta: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.theta = _check_number("ThresholdedReLU", "theta", theta)

    def call(self, inputs: Tensor) -> Tensor:
        return activations.threshold(inputs, self.theta, 0.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "theta": self.theta}


def _large_negative(dtype: _dt.DType) -> float:
    """What Keras adds to masked-out logits: -1e9, or -3e4 where that would overflow."""
    return -3e4 if dtype in (_dt.float16,) else -1e9


@serialization.register
class Softmax(Layer):
    """Softmax along ``axis`` (an int or a list of axes). With ``mask`` (1 keeps, 0 drops),
    masked entries get a large negative logit and then an output of 0 (Keras 3).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Softmax()
    >>> layer(tf.constant([[1., 1., 5.]]), mask=tf.constant([[True, True, False]])).numpy().tolist()
    [[0.5, 0.5, 0.0]]
    """

    def __init__(self, axis: int | list = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else int(axis)

    def call(self, inputs: Tensor, mask: Any = None) -> Tensor:
        if mask is not None:
            keep = _m.cast(mask, inputs.dtype)
            inputs = _m.add(inputs, _m.multiply(_m.subtract(1.0, keep),
                                                _large_negative(inputs.dtype)))
        if isinstance(self.axis, list) and len(self.axis) > 1:
            out = _m.exp(_m.subtract(inputs, _stable.reduce_logsumexp(
                inputs, axis=self.axis, keepdims=True)))
        else:
            axis = self.axis[0] if isinstance(self.axis, list) else self.axis
            out = _nn.softmax(inputs, axis=axis)
        if mask is not None:
            out = _m.multiply(out, _m.cast(mask, out.dtype))
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
