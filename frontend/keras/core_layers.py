"""The core Keras layers: ``Dense``, ``Flatten`` and ``Activation``."""
from __future__ import annotations

import math
from typing import Any, Callable

from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import activations, constraints, initializers, regularizers
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.eager.tensor import Tensor


def set_weight_options(layer: Layer, **options: Any) -> None:
    """Sets a layer's ``<weight>_regularizer``/``<weight>_constraint`` attributes from Keras's
    arguments (names, config dicts, objects or None)."""
    for key, value in options.items():
        setattr(layer, key, (regularizers if key.endswith("regularizer") else
                             constraints).get(value))


def weight_options_config(layer: Layer, *keys: str) -> dict:
    """The attributes ``set_weight_options`` set, serialized for a config (None stays)."""
    return {key: (regularizers if key.endswith("regularizer") else
                  constraints).serialize_or_none(getattr(layer, key)) for key in keys}


_KERNEL_BIAS = ("kernel_regularizer", "bias_regularizer", "kernel_constraint",
                "bias_constraint")


def set_kernel_bias_options(layer: Layer, kernel_regularizer: Any, bias_regularizer: Any,
                            kernel_constraint: Any, bias_constraint: Any) -> None:
    """``set_weight_options`` for a kernel and a bias (Dense, EinsumDense)."""
    set_weight_options(layer, kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)


def kernel_bias_options_config(layer: Layer) -> dict:
    """``weight_options_config`` for a kernel and a bias."""
    return weight_options_config(layer, *_KERNEL_BIAS)


#: The options of a normalization's ``beta`` and ``gamma``.
BETA_GAMMA = ("beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")


@serialization.register
class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)``.

    The kernel has shape ``(input_dim, units)`` and the bias ``(units,)``; both are created on
    the first call from the last dimension of the inputs, as the attributes ``kernel`` and
    ``bias`` (their checkpoint names, as in TensorFlow). Inputs need rank 2 or more: for rank
    3+ the kernel is applied to the last axis.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Dense(2, activation="relu", kernel_initializer="ones",
    ...                               bias_initializer=tf.keras.initializers.Constant(-1.))
    >>> layer(tf.constant([[1., 2.]])).numpy().tolist()
    [[2.0, 2.0]]
    >>> layer.kernel.shape, layer.bias.shape
    (TensorShape([2, 2]), TensorShape([2]))
    """

    def __init__(self, units: int, activation: str | Callable[..., Any] | None = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        set_kernel_bias_options(self, kernel_regularizer, bias_regularizer, kernel_constraint,
                                bias_constraint)
        if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
            raise ValueError(f"Dense: received an invalid value for `units`, expected a "
                             f"positive integer. Received: units={units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _check_input(self, shape: TensorShape) -> None:
        if shape.rank is not None and shape.rank < 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f'min_ndim=2, found ndim={shape.rank}. Full shape received: '
                f'{tuple(shape.as_list())}. Dense layers take a batch of vectors; add a batch '
                f'dimension, e.g. x[None, :] or tf.expand_dims(x, 0).')
        if self.built and shape.rank is not None and shape[-1] is not None and \
                shape[-1] != self.kernel.shape[0]:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected axis '
                f'-1 of input shape to have value {self.kernel.shape[0]}, but received input '
                f'with shape {tuple(shape.as_list())}. The layer was built for inputs with '
                f'{self.kernel.shape[0]} features; use a new Dense layer for another size.')

    def build(self, input_shape: Any) -> None:
        """Creates ``kernel`` (input_dim, units) and, with ``use_bias``, ``bias`` (units,)."""
        shape = TensorShape(input_shape)
        self._check_input(shape)
        last = shape[-1] if shape.rank is not None else None
        if last is None:
            raise ValueError(f"The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {shape}. Give "
                             f"the inputs (or the input_signature) a known last dimension.")
        self.kernel = self.add_weight("kernel", shape=[last, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, trainable=True,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, trainable=True,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.built = True

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                **kernel_bias_options_config(self)}

    def call(self, inputs: Tensor) -> Tensor:
        """``activation(inputs @ kernel + bias)``."""
        self._check_input(inputs.shape)
        if inputs.dtype != self.kernel.dtype:  # Keras's Dense casts any input (ints too)
            inputs = _m.cast(inputs, self.kernel.dtype)
        outputs = _m.matmul(inputs, self.kernel)  # rank 3+: batch dims broadcast over kernel
        if self.use_bias:
            outputs = _m.add(outputs, self.bias)
        return self.activation(outputs)


@serialization.register
class Flatten(Layer):
    """Flattens each example: ``(batch, d1, d2, ...)`` becomes ``(batch, d1 * d2 * ...)``;
    a rank-1 input becomes ``(batch, 1)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Flatten()(tf.zeros([2, 3, 4])).shape
    TensorShape([2, 12])
    """

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Flatten: only data_format='channels_last' (or None) is "
                             f"supported, got {data_format!r}.")
        self.data_format = data_format

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}

    def call(self, inputs: Tensor) -> Tensor:
        """Reshapes to ``(batch, -1)``."""
        dims = inputs.shape.as_list() if inputs.shape.rank is not None else None
        if dims is None:
            raise ValueError(f'Layer "{self.name}" (Flatten) needs inputs of known rank; give '
                             f'the function an input_signature with a known rank.')
        if len(dims) == 1:
            return _a.expand_dims(inputs, -1)
        rest = dims[1:]
        if None not in rest:
            return _a.reshape(inputs, [-1, math.prod(rest)])
        if dims[0] is not None:
            return _a.reshape(inputs, [dims[0], -1])
        raise ValueError(f'Layer "{self.name}" (Flatten) cannot flatten inputs of shape '
                         f'{tuple(dims)}: both the batch size and a feature dimension are '
                         f'unknown. Fix one of them in the input_signature.')


@serialization.register
class Activation(Layer):
    """Applies an activation function (a name such as ``'relu'`` or a callable).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Activation("relu")(tf.constant([[-1., 1.]])).numpy().tolist()
    [[0.0, 1.0]]
    """

    def __init__(self, activation: str | Callable[..., Any], **kwargs: Any):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}

    def call(self, inputs: Tensor) -> Tensor:
        """``activation(inputs)``."""
        return self.activation(inputs)


__all__ = ["Activation", "Dense", "Flatten"]
