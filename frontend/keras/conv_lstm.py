"""Convolutional LSTM layers (Shi et al., 2015): ``ConvLSTM1D``/``2D``/``3D`` run an LSTM whose
matrix products are convolutions over inputs ``(batch, time, *spatial, channels)``, with
Keras's gates (i, f, c, o), weights (``kernel``, ``recurrent_kernel``, ``bias`` on the layer's
``cell``; ``unit_forget_bias``) and arguments. The recurrent convolution uses ``'same'``
padding and stride 1, as Keras's. Time steps run in one ``while_loop``."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import activations, constraints, initializers, regularizers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.conv_layers import _tf_format, normalize_padding, normalize_tuple
from stagecraft.keras.recurrent import _ForgetBiasOnes
from stagecraft.ops import array_ops as _a
from stagecraft.ops import conv_ops as _conv
from stagecraft.ops import manip_ops as _manip
from stagecraft.ops import math_ops as _m
from stagecraft.ops.tensor_array import TensorArray
from stagecraft.staging.while_loop import while_loop

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]

_OPTIONS = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
            "kernel_constraint", "recurrent_constraint", "bias_constraint")


class _ConvLSTMCell(Layer):
    """One step: ``z = conv(x, kernel) + conv(h, recurrent_kernel) + bias`` split into gates
    ``i, f, c, o``; ``c' = sigmoid(f) c + sigmoid(i) tanh(c~)``, ``h' = sigmoid(o) tanh(c')``
    (with the layer's activations)."""

    def __init__(self, rank: int, filters: int, kernel_size: Any, strides: Any, padding: str,
                 dilation_rate: Any, activation: Any, recurrent_activation: Any,
                 use_bias: bool, kernel_initializer: Any, recurrent_initializer: Any,
                 bias_initializer: Any, unit_forget_bias: bool, options: dict, **kwargs: Any):
        super().__init__(**kwargs)
        self.rank, self.filters = rank, filters
        self.kernel_size, self.strides = kernel_size, strides
        self.padding, self.dilation_rate = padding, dilation_rate
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = use_bias, unit_forget_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self._options = options

    def _weight(self, name: str, shape: list, initializer: Any, key: str) -> Any:
        return self.add_weight(name, shape, initializer=initializer,
                               regularizer=self._options[f"{key}_regularizer"],
                               constraint=self._options[f"{key}_constraint"])

    def build(self, input_shape: Any) -> None:
        channels = TensorShape(input_shape)[-1]
        if channels is None:
            raise ValueError(f"{self.name}: the channel dimension of the inputs must be known.")
        n = 4 * self.filters
        self.kernel = self._weight("kernel", list(self.kernel_size) + [channels, n],
                                   self.kernel_initializer, "kernel")
        self.recurrent_kernel = self._weight("recurrent_kernel",
                                             list(self.kernel_size) + [self.filters, n],
                                             self.recurrent_initializer, "recurrent")
        init = _ForgetBiasOnes(self.bias_initializer, self.filters) \
            if self.unit_forget_bias else self.bias_initializer
        self.bias = self._weight("bias", [n], init, "bias") if self.use_bias else None
        self.built = True

    def _convolve(self, x: Tensor, kernel: Any, recurrent: bool) -> Tensor:
        return _conv.convolution(
            x, kernel, strides=[1] * self.rank if recurrent else list(self.strides),
            padding="SAME" if recurrent or self.padding == "same" else "VALID",
            dilations=[1] * self.rank if recurrent else list(self.dilation_rate),
            data_format=_tf_format(self.rank, "channels_last"))

    def call(self, inputs: Tensor, states: list) -> tuple[Tensor, list]:
        h, c = states
        z = _m.add(self._convolve(inputs, self.kernel, False),
                   self._convolve(h, self.recurrent_kernel, True))
        if self.bias is not None:
            z = _m.add(z, self.bias)
        i, f, g, o = _manip.split(z, 4, axis=-1)
        i, f, o = (self.recurrent_activation(t) for t in (i, f, o))
        c = _m.add(_m.multiply(f, c), _m.multiply(i, self.activation(g)))
        h = _m.multiply(o, self.activation(c))
        return h, [h, c]


class _ConvLSTM(Layer):
    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, stateful: bool = False,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, **kwargs: Any):
        cls = type(self).__name__
        options = {k: kwargs.pop(k, None) for k in _OPTIONS}
        options = {k: (regularizers if k.endswith("regularizer") else constraints).get(v)
                   for k, v in options.items()}
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{cls}: only data_format='channels_last' is supported; got "
                             f"{data_format!r}. Transpose the inputs to channels last.")
        if stateful or dropout or recurrent_dropout:
            raise ValueError(f"{cls}: stateful=True and dropout/recurrent_dropout are not "
                             f"supported; use stateful=False and dropout=0.")
        if isinstance(filters, bool) or not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{cls}: filters must be a positive integer; got {filters!r}.")
        strides = normalize_tuple(strides, self.rank, "strides", cls)
        dilation = normalize_tuple(dilation_rate, self.rank, "dilation_rate", cls)
        if max(strides) > 1 and max(dilation) > 1:
            raise ValueError(f"{cls}: `strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`.")
        self.cell = _ConvLSTMCell(
            self.rank, filters, normalize_tuple(kernel_size, self.rank, "kernel_size", cls),
            strides, normalize_padding(padding, cls, ("valid", "same")), dilation, activation,
            recurrent_activation, bool(use_bias), kernel_initializer, recurrent_initializer,
            bias_initializer, bool(unit_forget_bias), options, name="conv_lstm_cell",
            dtype=kwargs.get("dtype"))
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.rank != self.rank + 3:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self.rank + 3} "
                             f"(batch, time, {self.rank} spatial axes, channels); got {shape}.")
        if not self.cell.built:
            self.cell.build(TensorShape([shape[0]] + shape.as_list()[2:]))
        self.built = True

    def call(self, inputs: Tensor, initial_state: Any = None, training: Any = None) -> Any:
        rank = inputs.shape.rank
        steps = _a.transpose(inputs, [1, 0] + list(range(2, rank)))  # time-major
        if self.go_backwards:
            steps = steps[::-1]
        if initial_state is None:
            # Keras's zero state: a convolution of zeros gives the output's spatial shape.
            zero_kernel = _a.zeros(self.cell.kernel_size + (inputs.shape[-1], self.cell.filters),
                                   dtype=inputs.dtype)
            zero = self.cell._convolve(_m.multiply(steps[0], 0.0), zero_kernel, False)
            states = [zero, zero]
        else:
            states = list(initial_state)
        time = _a.shape(steps)[0]
        xs = TensorArray(inputs.dtype, size=time).unstack(steps)
        ys = TensorArray(inputs.dtype, size=time)

        def body(t: Tensor, ys: TensorArray, last: Tensor, h: Tensor, c: Tensor) -> tuple:
            y, (h, c) = self.cell.call(xs.read(t), [h, c])
            return _m.add(t, 1), ys.write(t, y), y, h, c

        t0 = _a.zeros([], dtype=time.dtype)
        _, ys, last, h, c = while_loop(lambda t, *_: _m.less(t, time), body,
                                       (t0, ys, states[0], *states))
        if self.return_sequences:
            stacked = ys.stack()
            result = _a.transpose(stacked, [1, 0] + list(range(2, rank)))
        else:
            result = last
        return [result, h, c] if self.return_state else result

    def get_config(self) -> dict:
        cell = self.cell
        return {**super().get_config(), "filters": cell.filters,
                "kernel_size": list(cell.kernel_size), "strides": list(cell.strides),
                "padding": cell.padding, "data_format": "channels_last",
                "dilation_rate": list(cell.dilation_rate),
                "activation": activations.serialize(cell.activation),
                "recurrent_activation": activations.serialize(cell.recurrent_activation),
                "use_bias": cell.use_bias,
                "kernel_initializer": initializers.serialize(cell.kernel_initializer),
                "recurrent_initializer": initializers.serialize(cell.recurrent_initializer),
                "bias_initializer": initializers.serialize(cell.bias_initializer),
                "unit_forget_bias": cell.unit_forget_bias,
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards,
                **{k: (regularizers if k.endswith("regularizer") else constraints)
                   .serialize_or_none(v) for k, v in cell._options.items()}}


@serialization.register
class ConvLSTM1D(_ConvLSTM):
    """A convolutional LSTM over sequences of ``(steps, channels)`` signals.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ConvLSTM1D(4, 3)(tf.ones([2, 5, 8, 3])).shape
    TensorShape([2, 6, 4])
    """
    rank = 1


@serialization.register
class ConvLSTM2D(_ConvLSTM):
    """A convolutional LSTM over sequences of images ``(batch, time, rows, cols, channels)``.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.ConvLSTM2D(4, 3, padding="same", return_sequences=True)
    >>> layer(tf.ones([2, 5, 6, 6, 3])).shape, layer.cell.kernel.shape
    (TensorShape([2, 5, 6, 6, 4]), TensorShape([3, 3, 3, 16]))
    """
    rank = 2


@serialization.register
class ConvLSTM3D(_ConvLSTM):
    """A convolutional LSTM over sequences of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ConvLSTM3D(2, 2)(tf.ones([1, 3, 4, 4, 4, 1])).shape
    TensorShape([1, 3, 3, 3, 2])
    """
    rank = 3
