"""``EinsumDense`` (a dense layer whose kernel contracts any axes, given by an einsum
equation, as transformers' projections use) and ``Identity``, with Keras's arguments and
weight names (``kernel``, ``bias``)."""
from __future__ import annotations

import re
from typing import Any, Callable

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import activations, initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.core_layers import kernel_bias_options_config, set_kernel_bias_options
from stagecraft.ops import math_ops as _m
from stagecraft.ops.einsum_ops import einsum

__all__ = ["EinsumDense", "Identity"]


def _analyze(equation: str, bias_axes: str | None, input_shape: list,
             output_shape: list) -> tuple[list, list | None, list]:
    """Keras's ``_analyze_einsum_string``: the kernel's and bias's shapes and the full output
    shape, for ``ab,bc->ac`` equations or ones with ``...`` leading the input and output."""
    left = equation.replace(" ", "")
    match = re.fullmatch(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", left)
    elided = 0
    if match is None:
        match = re.fullmatch(r"\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)", left)
        if match is None:
            raise ValueError(f"EinsumDense: invalid einsum equation {equation!r}; expected "
                             f"'ab,bc->ac' or '...b,bc->...c' (input, kernel, output).")
        elided = len(input_shape) - len(match.group(1))
    input_spec, weight_spec, output_spec = match.groups()
    if not elided and len(input_spec) != len(input_shape):
        raise ValueError(f"EinsumDense: the equation {equation!r} names {len(input_spec)} "
                         f"input axes but the input has rank {len(input_shape)}.")
    full_output = list(input_shape[:elided]) if elided else [input_shape[0]]
    full_output += output_shape
    if len(full_output) != len(output_spec) + elided:
        raise ValueError(f"EinsumDense: output_shape {output_shape} (without the batch axis) "
                         f"does not fit the equation's output {output_spec!r}.")
    offset_in, offset_out = elided, elided
    input_dims = {c: input_shape[i + offset_in] for i, c in enumerate(input_spec)}
    output_dims = {c: full_output[i + offset_out] for i, c in enumerate(output_spec)}
    for c in output_spec:
        if c not in input_spec and c not in weight_spec:
            raise ValueError(f"EinsumDense: output axis {c!r} of {equation!r} is in neither "
                             f"the input nor the kernel.")
    kernel_shape = []
    for c in weight_spec:
        size = input_dims.get(c, output_dims.get(c))
        if size is None:
            raise ValueError(f"EinsumDense: kernel axis {c!r} of {equation!r} has no known "
                             f"size (it must be a known input or output axis).")
        kernel_shape.append(int(size))
    bias_shape = None
    if bias_axes:
        for c in bias_axes:
            if c not in output_spec:
                raise ValueError(f"EinsumDense: bias axis {c!r} is not an output axis of "
                                 f"{equation!r}.")
        first = min(output_spec.find(c) for c in bias_axes)
        bias_shape = [int(output_dims[c]) if c in bias_axes else 1 for c in output_spec[first:]]
    return kernel_shape, bias_shape, full_output


@serialization.register
class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``: the kernel's shape follows
    from the equation, the inputs' shape and ``output_shape`` (the output without its batch
    axis); ``bias_axes`` names the output axes the bias spans.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, 64),
    ...                                     bias_axes="d")
    >>> layer(tf.ones([2, 5, 16])).shape, layer.kernel.shape, layer.bias.shape
    (TensorShape([2, 5, 64]), TensorShape([16, 64]), TensorShape([64]))
    """

    def __init__(self, equation: str, output_shape: Any,
                 activation: str | Callable[..., Any] | None = None,
                 bias_axes: str | None = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        set_kernel_bias_options(self, kernel_regularizer, bias_regularizer, kernel_constraint,
                                bias_constraint)
        self.equation = equation
        self.partial_output_shape = [output_shape] if isinstance(output_shape, int) \
            else list(output_shape)
        self.activation = activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape: Any) -> None:
        dims = TensorShape(input_shape).as_list()
        kernel_shape, bias_shape, self.full_output_shape = _analyze(
            self.equation, self.bias_axes, dims, self.partial_output_shape)
        self.kernel = self.add_weight("kernel", kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", bias_shape, initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) \
            if bias_shape is not None else None
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        out = einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            out = _m.add(out, self.bias)
        return self.activation(out)

    def get_config(self) -> dict:
        return {**super().get_config(), "equation": self.equation,
                "output_shape": self.partial_output_shape,
                "activation": activations.serialize(self.activation),
                "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                **kernel_bias_options_config(self)}


@serialization.register
class Identity(Layer):
    """Returns its inputs unchanged (a placeholder in a model).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Identity()(tf.constant([1., 2.])).numpy().tolist()
    [1.0, 2.0]
    """

    def call(self, inputs: Any) -> Any:
        return inputs
