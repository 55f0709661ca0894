"""Keras's convolution layers: ``Conv1D/2D/3D``, their transposes, ``DepthwiseConv1D/2D`` and
``SeparableConv1D/2D``, with Keras's argument names, defaults, weight names and shapes
(``kernel`` is ``kernel_size + (in_channels // groups, filters)``), built on ``tf.nn``'s
convolutions."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import (activations, constraints, initializers, regularizers,
                              serialization)
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import conv_ops as _conv
from stagecraft.ops import manip_ops as _manip
from stagecraft.ops import math_ops as _m

#: The weights whose ``<weight>_regularizer``/``<weight>_constraint`` arguments the layers take.
_WEIGHTS = ("kernel", "bias", "depthwise", "pointwise")

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D",
           "SeparableConv2D"]


def normalize_tuple(value: Any, rank: int, what: str, layer: str) -> tuple[int, ...]:
    """``value`` as a ``rank``-tuple of positive ints (an int is repeated), as Keras does."""
    items = (value,) * rank if isinstance(value, int) and not isinstance(value, bool) \
        else tuple(value) if isinstance(value, (list, tuple)) else None
    if items is None or len(items) != rank or \
            any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in items):
        raise ValueError(f"{layer}: the `{what}` argument must be a tuple of {rank} positive "
                         f"integers (or one integer). Received: {what}={value!r}.")
    return items


def normalize_padding(padding: Any, layer: str, allowed: tuple[str, ...]) -> str:
    p = padding.lower() if isinstance(padding, str) else padding
    if p not in allowed:
        raise ValueError(f"{layer}: the `padding` argument must be one of "
                         f"{', '.join(repr(a) for a in allowed)}. Received: padding={padding!r}.")
    return p


def normalize_data_format(data_format: Any, layer: str) -> str:
    fmt = "channels_last" if data_format is None else data_format
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: the `data_format` argument must be 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}.")
    return fmt


def _tf_format(rank: int, fmt: str) -> str:
    spatial = "DHW"[3 - rank:]
    return f"N{spatial}C" if fmt == "channels_last" else f"NC{spatial}"


def deconv_output_length(length: int | None, kernel: int, padding: str, output_padding: int | None,
                         stride: int, dilation: int = 1) -> int | None:
    """The length of a transposed convolution's output along one dimension (Keras's rule)."""
    if length is None:
        return None
    k = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(k - stride, 0)
        return length * stride
    pad = k // 2 if padding == "same" else 0
    return (length - 1) * stride + k - 2 * pad + output_padding


class _BaseConv(Layer):
    """What every convolution layer shares: geometry arguments, bias, activation, the channel
    axis and checks of the input's rank and channels."""

    rank: int = 2
    paddings: tuple[str, ...] = ("valid", "same")

    def __init__(self, kernel_size: Any, strides: Any, padding: str, data_format: Any,
                 dilation_rate: Any, activation: Any, use_bias: bool, bias_initializer: Any,
                 **kwargs: Any):
        # Keras's per-weight regularizer and constraint arguments (activity_regularizer goes
        # to the base class).
        options = {f"{w}_{kind}": kwargs.pop(f"{w}_{kind}", None)
                   for w in _WEIGHTS for kind in ("regularizer", "constraint")}
        super().__init__(**kwargs)
        cls = type(self).__name__
        self._weight_options = {
            key: (regularizers if key.endswith("regularizer") else constraints).get(value)
            for key, value in options.items()}
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size", cls)
        self.strides = normalize_tuple(strides, self.rank, "strides", cls)
        self.padding = normalize_padding(padding, cls, self.paddings)
        self.data_format = normalize_data_format(data_format, cls)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate", cls)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{cls}: `strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}.")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def _input_channels(self, input_shape: Any) -> int:
        shape = TensorShape(input_shape)
        self._check_rank(shape)
        channels = shape[self._channel_axis]
        if channels is None:
            raise ValueError(f'The channel dimension of the inputs to layer "{self.name}" should '
                             f'be defined. Found None. Full input shape received: {shape}.')
        return int(channels)

    def _check_rank(self, shape: TensorShape) -> None:
        if shape.rank is not None and shape.rank != self.rank + 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f'ndim={self.rank + 2}, found ndim={shape.rank}. Full shape received: '
                f'{tuple(shape.as_list())}. {type(self).__name__} takes a batch of '
                f'{"(length, channels)" if self.rank == 1 else f"{self.rank}-D images"}; add a '
                f'batch dimension with tf.expand_dims(x, 0) if you have one example.')

    def _check_channels(self, inputs: Tensor, expected: int) -> None:
        self._check_rank(inputs.shape)
        got = inputs.shape[self._channel_axis]
        if got is not None and got != expected:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected axis '
                f'{self._channel_axis} of input shape to have value {expected}, but received '
                f'input with shape {tuple(inputs.shape.as_list())}.')

    def _options(self, weight: str) -> dict:
        """``add_weight``'s regularizer and constraint for ``weight`` (``'kernel'``, ...)."""
        return {"regularizer": self._weight_options[f"{weight}_regularizer"],
                "constraint": self._weight_options[f"{weight}_constraint"]}

    def _add_bias(self, name: str, size: int) -> None:
        self.bias = self.add_weight(name, shape=[size], initializer=self.bias_initializer,
                                    **self._options("bias")) if self.use_bias else None

    def _finish(self, outputs: Tensor) -> Tensor:
        if self.use_bias:
            if self.data_format == "channels_last":
                outputs = _m.add(outputs, self.bias)
            else:
                outputs = _m.add(outputs, _a.reshape(self.bias, [-1] + [1] * self.rank))
        return self.activation(outputs)

    @property
    def _tf_padding(self) -> str:
        return "VALID" if self.padding in ("valid", "causal") else "SAME"

    def get_config(self) -> dict:
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "bias_initializer": initializers.serialize(self.bias_initializer),
                **self._options_config()}

    def _options_config(self) -> dict:
        """The regularizer/constraint arguments that were given, serialized."""
        return {key: (regularizers.serialize if key.endswith("regularizer")
                      else constraints.serialize)(value)
                for key, value in self._weight_options.items() if value is not None}


def positive_filters(layer: str, filters: Any) -> int:
    """``filters`` if it is a positive int; a ValueError in Keras's words otherwise."""
    if isinstance(filters, bool) or not isinstance(filters, int) or filters <= 0:
        raise ValueError(f"{layer}: invalid value for argument `filters`, expected a positive "
                         f"integer. Received: filters={filters!r}.")
    return filters


class _Conv(_BaseConv):
    """``activation(conv(inputs, kernel) + bias)`` over ``rank`` spatial dimensions."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: Any = None, dilation_rate: Any = 1,
                 groups: int = 1, activation: str | Callable[..., Any] | None = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", **kwargs: Any):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, **kwargs)
        cls = type(self).__name__
        positive_filters(cls, filters)
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0 or \
                filters % groups:
            raise ValueError(f"{cls}: the number of filters must be evenly divisible by the "
                             f"number of groups. Received: groups={groups}, filters={filters}.")
        self.filters, self.groups = filters, groups
        self.kernel_initializer = initializers.get(kernel_initializer)

    def build(self, input_shape: Any) -> None:
        """Creates ``kernel`` (``kernel_size + (in_channels // groups, filters)``) and
        ``bias`` (``(filters,)``)."""
        channels = self._input_channels(input_shape)
        if channels % self.groups:
            raise ValueError(
                f'Layer "{self.name}": the number of input channels must be evenly divisible by '
                f'the number of groups. Received: groups={self.groups}, input channels='
                f'{channels} (input shape {TensorShape(input_shape)}).')
        self.kernel = self.add_weight(
            "kernel", shape=list(self.kernel_size) + [channels // self.groups, self.filters],
            initializer=self.kernel_initializer, **self._options("kernel"))
        self._add_bias("bias", self.filters)
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        """Convolves ``inputs`` with ``kernel``, adds ``bias`` and applies the activation."""
        self._check_channels(inputs, self.kernel.shape[-2] * self.groups)
        if self.padding == "causal":  # Conv1D only: pad the start so no output sees the future
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            inputs = _manip.pad(inputs, [[0, 0], [left, 0], [0, 0]])
        outputs = _conv.convolution(inputs, self.kernel, strides=list(self.strides),
                                    padding=self._tf_padding,
                                    dilations=list(self.dilation_rate),
                                    data_format=_tf_format(self.rank, self.data_format))
        return self._finish(outputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, "groups": self.groups,
                "kernel_initializer": initializers.serialize(self.kernel_initializer)}


@serialization.register
class Conv1D(_Conv):
    """1-D convolution over ``(batch, steps, channels)``; ``padding`` may also be
    ``'causal'`` (output ``t`` sees inputs up to ``t`` only).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Conv1D(4, 3)(tf.ones([2, 10, 3])).shape
    TensorShape([2, 8, 4])
    """

    rank = 1
    paddings = ("valid", "same", "causal")


@serialization.register
class Conv2D(_Conv):
    """2-D convolution over ``(batch, rows, cols, channels)`` images (``channels_first``:
    ``(batch, channels, rows, cols)``).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Conv2D(8, 3, strides=2, padding="same")
    >>> layer(tf.ones([1, 9, 9, 3])).shape, layer.kernel.shape
    (TensorShape([1, 5, 5, 8]), TensorShape([3, 3, 3, 8]))
    """

    rank = 2


@serialization.register
class Conv3D(_Conv):
    """3-D convolution over ``(batch, depth, rows, cols, channels)`` volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Conv3D(2, 3)(tf.ones([1, 5, 5, 5, 1])).shape
    TensorShape([1, 3, 3, 3, 2])
    """

    rank = 3


class _ConvTranspose(_BaseConv):
    """The gradient of a convolution with respect to its input, used as a layer ("deconvolution");
    ``kernel`` is ``kernel_size + (filters, in_channels)``."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", output_padding: Any = None, data_format: Any = None,
                 dilation_rate: Any = 1, activation: str | Callable[..., Any] | None = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", **kwargs: Any):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, **kwargs)
        cls = type(self).__name__
        self.filters = positive_filters(cls, filters)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.output_padding = None
        if output_padding is not None:
            pads = normalize_tuple(output_padding, self.rank, "output_padding", cls) \
                if output_padding != 0 else (0,) * self.rank
            if any(p >= s for p, s in zip(pads, self.strides)):
                raise ValueError(f"{cls}: strides {self.strides} must be greater than "
                                 f"output padding {pads}.")
            self.output_padding = pads

    def build(self, input_shape: Any) -> None:
        """Creates ``kernel`` (``kernel_size + (filters, in_channels)``) and ``bias``."""
        channels = self._input_channels(input_shape)
        self.kernel = self.add_weight(
            "kernel", shape=list(self.kernel_size) + [self.filters, channels],
            initializer=self.kernel_initializer, **self._options("kernel"))
        self._add_bias("bias", self.filters)
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        """The transposed convolution of ``inputs`` with ``kernel``, plus bias and activation."""
        self._check_channels(inputs, self.kernel.shape[-1])
        dims = inputs.shape.as_list()
        spatial = dims[1:-1] if self.data_format == "channels_last" else dims[2:]
        if None in spatial:
            raise ValueError(f'Layer "{self.name}" needs the spatial dimensions of its inputs '
                             f'to be known; got input shape {tuple(dims)}. Give the function '
                             f'an input_signature with known image sizes.')
        pads = self.output_padding or (None,) * self.rank
        out = [deconv_output_length(n, k, self.padding, p, s, d) for n, k, p, s, d in
               zip(spatial, self.kernel_size, pads, self.strides, self.dilation_rate)]
        batch = dims[0] if dims[0] is not None else _a.shape(inputs)[0]
        shape = [batch] + out + [self.filters] if self.data_format == "channels_last" \
            else [batch, self.filters] + out
        outputs = _conv.conv_transpose(inputs, self.kernel, shape, strides=list(self.strides),
                                       padding=self._tf_padding,
                                       dilations=list(self.dilation_rate),
                                       data_format=_tf_format(self.rank, self.data_format))
        return self._finish(outputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "output_padding": self.output_padding,
                "kernel_initializer": initializers.serialize(self.kernel_initializer)}


@serialization.register
class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Conv1DTranspose(2, 3, strides=2)(tf.ones([1, 4, 3])).shape
    TensorShape([1, 9, 2])
    """

    rank = 1


@serialization.register
class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution: with ``strides=2`` and ``padding='same'`` it doubles the
    image size.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same")
    >>> layer(tf.ones([1, 5, 5, 8])).shape, layer.kernel.shape
    (TensorShape([1, 10, 10, 4]), TensorShape([3, 3, 4, 8]))
    """

    rank = 2


@serialization.register
class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Conv3DTranspose(1, 2, strides=2)(tf.ones([1, 2, 2, 2, 3])).shape
    TensorShape([1, 4, 4, 4, 1])
    """

    rank = 3


class _DepthwiseConv(_BaseConv):
    """Each input channel convolved with its own ``depth_multiplier`` filters
    (``depthwise_kernel``: ``kernel_size + (in_channels, depth_multiplier)``)."""

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format: Any = None, dilation_rate: Any = 1,
                 activation: str | Callable[..., Any] | None = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 **kwargs: Any):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, **kwargs)
        if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, int) or \
                depth_multiplier <= 0:
            raise ValueError(f"{type(self).__name__}: `depth_multiplier` must be a positive "
                             f"integer. Received: depth_multiplier={depth_multiplier!r}.")
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = initializers.get(depthwise_initializer)

    def build(self, input_shape: Any) -> None:
        """Creates ``depthwise_kernel`` and ``bias`` (``in_channels * depth_multiplier``)."""
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=list(self.kernel_size) + [channels, self.depth_multiplier],
            initializer=self.depthwise_initializer, **self._options("depthwise"))
        self._add_bias("bias", channels * self.depth_multiplier)
        self.built = True

    def _depthwise(self, inputs: Tensor) -> Tensor:
        channels = self.depthwise_kernel.shape[-2]
        self._check_channels(inputs, channels)
        # A depthwise convolution is a grouped one with one group per input channel.
        kernel = _a.reshape(self.depthwise_kernel,
                            list(self.kernel_size) + [1, channels * self.depth_multiplier])
        return _conv.convolution(inputs, kernel, strides=list(self.strides),
                                 padding=self._tf_padding, dilations=list(self.dilation_rate),
                                 data_format=_tf_format(self.rank, self.data_format))

    def call(self, inputs: Tensor) -> Tensor:
        """The depthwise convolution of ``inputs``, plus bias and activation."""
        return self._finish(self._depthwise(inputs))

    def get_config(self) -> dict:
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer)}


@serialization.register
class DepthwiseConv1D(_DepthwiseConv):
    """Depthwise 1-D convolution.

    >>> import stagecraft as tf
    >>> tf.keras.layers.DepthwiseConv1D(3, depth_multiplier=2)(tf.ones([1, 6, 4])).shape
    TensorShape([1, 4, 8])
    """

    rank = 1


@serialization.register
class DepthwiseConv2D(_DepthwiseConv):
    """Depthwise 2-D convolution (MobileNet's building block).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.DepthwiseConv2D(3, padding="same")
    >>> layer(tf.ones([1, 5, 5, 4])).shape, layer.depthwise_kernel.shape
    (TensorShape([1, 5, 5, 4]), TensorShape([3, 3, 4, 1]))
    """

    rank = 2


class _SeparableConv(_DepthwiseConv):
    """A depthwise convolution followed by a 1×1 ``pointwise_kernel`` mixing the channels."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: Any = None, dilation_rate: Any = 1, depth_multiplier: int = 1,
                 activation: str | Callable[..., Any] | None = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 **kwargs: Any):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, **kwargs)
        self.filters = positive_filters(type(self).__name__, filters)
        self.pointwise_initializer = initializers.get(pointwise_initializer)

    def build(self, input_shape: Any) -> None:
        """Creates ``depthwise_kernel``, ``pointwise_kernel`` and ``bias`` (``filters``)."""
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=list(self.kernel_size) + [channels, self.depth_multiplier],
            initializer=self.depthwise_initializer, **self._options("depthwise"))
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            shape=[1] * self.rank + [channels * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer, **self._options("pointwise"))
        self._add_bias("bias", self.filters)
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        """Depthwise, then pointwise convolution, plus bias and activation."""
        mixed = _conv.convolution(self._depthwise(inputs), self.pointwise_kernel,
                                  padding="VALID",
                                  data_format=_tf_format(self.rank, self.data_format))
        return self._finish(mixed)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer)}


@serialization.register
class SeparableConv1D(_SeparableConv):
    """Depthwise-separable 1-D convolution.

    >>> import stagecraft as tf
    >>> tf.keras.layers.SeparableConv1D(5, 3)(tf.ones([1, 6, 4])).shape
    TensorShape([1, 4, 5])
    """

    rank = 1


@serialization.register
class SeparableConv2D(_SeparableConv):
    """Depthwise-separable 2-D convolution (Xception's building block).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.SeparableConv2D(6, 3, padding="same")
    >>> layer(tf.ones([1, 5, 5, 4])).shape, layer.pointwise_kernel.shape
    (TensorShape([1, 5, 5, 6]), TensorShape([1, 1, 4, 6]))
    """

    rank = 2
