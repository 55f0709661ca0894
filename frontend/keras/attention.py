"""``MultiHeadAttention`` (Keras's weights and formulas): per-head projections of query, key
and value, scaled dot-product attention over the key positions, and an output projection."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["MultiHeadAttention"]


class _Projection(Layer):
    """Keras's ``EinsumDense`` as attention uses it: ``kernel`` of shape ``(*in, *out)``
    applied to the last ``len(in)`` axes, plus ``bias`` of shape ``out``."""

    def __init__(self, in_dims: list[int], out_dims: list[int], use_bias: bool,
                 kernel_initializer: Any, bias_initializer: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.in_dims, self.out_dims, self.use_bias = in_dims, out_dims, use_bias
        self.kernel = self.add_weight("kernel", in_dims + out_dims,
                                      initializer=kernel_initializer)
        self.bias = self.add_weight("bias", out_dims, initializer=bias_initializer) \
            if use_bias else None
        self.built = True

    def call(self, x: Tensor) -> Tensor:
        lead = _a.shape(x)[:x.shape.rank - len(self.in_dims)]
        n_in, n_out = math.prod(self.in_dims), math.prod(self.out_dims)
        flat = _a.reshape(x, [-1, n_in])
        out = _m.matmul(flat, _a.reshape(self.kernel, [n_in, n_out]))
        dims = convert_to_tensor(np.asarray(self.out_dims, lead.dtype.np))
        out = _a.reshape(out, _a.concat([lead, dims], 0))
        return _m.add(out, self.bias) if self.use_bias else out


@serialization.register
class MultiHeadAttention(Layer):
    """Multi-head attention: ``query`` ``(B, T, dim)`` attends to ``value`` ``(B, S, dim_v)``
    (and ``key``, default ``value``) with ``num_heads`` heads of size ``key_dim``:
    ``softmax(q k^T / sqrt(key_dim))`` weights the values, per head; the heads are
    projected back to the query's last dimension (or ``output_shape``). ``attention_mask``
    ``(B, T, S)`` (True = attend) masks positions out.

    >>> import stagecraft as tf
    >>> mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    >>> out, scores = mha(tf.ones([3, 5, 8]), tf.ones([3, 7, 6]), return_attention_scores=True)
    >>> out.shape, scores.shape
    (TensorShape([3, 5, 8]), TensorShape([3, 2, 5, 7]))
    """

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape: Any = None,
                 attention_axes: Any = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", **kwargs: Any):
        if attention_axes is not None:
            raise ValueError("MultiHeadAttention: attention_axes is not supported (attention "
                             "runs over axis 1, the sequence).")
        super().__init__(**kwargs)
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout, self.use_bias = float(dropout), bool(use_bias)
        self.output_shape_arg = output_shape
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _projection(self, name: str, in_dims: list[int], out_dims: list[int]) -> _Projection:
        return _Projection(in_dims, out_dims, self.use_bias, self.kernel_initializer,
                           self.bias_initializer, name=name, dtype=self.dtype)

    def build(self, input_shape: Any) -> None:
        """Built on the first call, from the query's, key's and value's last dimensions."""
        self.built = True

    def _build_from(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        h = self.num_heads
        self.query = self._projection("query", [query.shape[-1]], [h, self.key_dim])
        self.key = self._projection("key", [key.shape[-1]], [h, self.key_dim])
        self.value = self._projection("value", [value.shape[-1]], [h, self.value_dim])
        out = self.output_shape_arg
        out_dims = [query.shape[-1]] if out is None else \
            ([out] if isinstance(out, int) else list(out))
        self.attention_output = self._projection("attention_output", [h, self.value_dim],
                                                 out_dims)

    def __call__(self, query: Any, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        if value is None:
            raise TypeError("MultiHeadAttention needs `value` (call it as mha(query, value)).")
        return super().__call__(query, value=value, key=key, **kwargs)

    def call(self, query: Tensor, value: Tensor, key: Tensor | None = None,
             attention_mask: Any = None, return_attention_scores: bool = False,
             training: Any = None) -> Any:
        value = self._convert_input(value)
        key = value if key is None else self._convert_input(key)
        if "query" not in vars(self):
            self._build_from(query, key, value)
        q = _m.multiply(self.query(query), 1.0 / math.sqrt(self.key_dim))  # (B, T, H, K)
        k, v = self.key(key), self.value(value)                              # (B, S, H, K|V)
        scores = _m.matmul(_a.transpose(q, [0, 2, 1, 3]),
                           _a.transpose(k, [0, 2, 3, 1]))                   # (B, H, T, S)
        if attention_mask is not None:
            mask = _a.expand_dims(_m.cast(attention_mask, _dt.bool_), 1)   # (B, 1, T, S)
            scores = _m.where(mask, scores, _m.add(_a.zeros_like(scores), -1e9))
        weights = _nn.softmax(scores, axis=-1)
        attended = _nn.dropout(weights, self.dropout) if training and self.dropout else weights
        heads = _m.matmul(attended, _a.transpose(v, [0, 2, 1, 3]))          # (B, H, T, V)
        out = self.attention_output(_a.transpose(heads, [0, 2, 1, 3]))      # (B, T, out)
        return (out, weights) if return_attention_scores else out

    def get_config(self) -> dict:
        out = self.output_shape_arg
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": None if out is None else (out if isinstance(out, int)
                                                          else list(out)),
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}

