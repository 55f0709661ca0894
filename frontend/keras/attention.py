"""``MultiHeadAttention`` (Keras's weights and formulas): per-head projections of query, key
and value, scaled dot-product attention over the key positions, and an output projection."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.einsum_dense import EinsumDense
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops.einsum_ops import einsum

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


def _attention_mask(query: Tensor, value: Tensor, attention_mask: Any,
                    use_causal_mask: bool) -> Tensor | None:
    """The boolean ``(B, T, S)`` (or broadcastable) mask of who may attend where: the given
    ``attention_mask`` and, with ``use_causal_mask``, Keras's lower-triangular causal mask
    (query position ``i`` sees key positions ``j <= i``)."""
    mask = None if attention_mask is None else _m.cast(attention_mask, _dt.bool_)
    if use_causal_mask:
        rows = _a.reshape(_a.range(0, _a.shape(query)[1]), [1, -1, 1])
        cols = _a.reshape(_a.range(0, _a.shape(value)[1]), [1, 1, -1])
        causal = _m.greater_equal(rows, cols)
        mask = causal if mask is None else _m.logical_and(mask, causal)
    return mask


class _QueryValueAttention(Layer):
    """What ``MultiHeadAttention`` and ``GroupedQueryAttention`` share: the call
    ``layer(query, value, key=None, ...)`` and the projections built on the first call by
    ``_build_from(query, key, value)``."""

    def __call__(self, query: Any, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        if value is None:
            raise TypeError(f"{type(self).__name__} needs `value` (call it as "
                            f"layer(query, value)).")
        return super().__call__(query, value=value, key=key, **kwargs)

    def build(self, input_shape: Any) -> None:
        """Built on the first call, from the query's, key's and value's last dimensions."""
        self.built = True

    def _build_from(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        # the one hook each attention subclass defines (its projections' weights)
        raise NotImplementedError(f"{type(self).__name__} must define _build_from(query, key, "
                                  f"value), which creates its weights.")

    def _key_value(self, query: Tensor, value: Any, key: Any) -> tuple[Tensor, Tensor]:
        """The key and value as tensors (the key defaults to the value); builds the
        projections on the first call."""
        value = self._convert_input(value)
        key = value if key is None else self._convert_input(key)
        if "query" not in vars(self):
            self._build_from(query, key, value)
        return key, value


@serialization.register
class MultiHeadAttention(_QueryValueAttention):
    """Multi-head attention: ``query`` ``(B, T, dim)`` attends to ``value`` ``(B, S, dim_v)``
    (and ``key``, default ``value``) with ``num_heads`` heads of size ``key_dim``:
    ``softmax(q k^T / sqrt(key_dim))`` weights the values, per head; the heads are
    projected back to the query's last dimension (or ``output_shape``). ``attention_mask``
    ``(B, T, S)`` (True = attend) masks positions out; ``use_causal_mask=True`` lets each
    query position see only the key positions up to its own.

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

    def call(self, query: Tensor, value: Tensor, key: Tensor | None = None,
             attention_mask: Any = None, return_attention_scores: bool = False,
             training: Any = None, use_causal_mask: bool = False) -> Any:
        key, value = self._key_value(query, value, key)
        q = _m.multiply(self.query(query), 1.0 / math.sqrt(self.key_dim))  # (B, T, H, K)
        k, v = self.key(key), self.value(value)                              # (B, S, H, K|V)
        scores = _m.matmul(_a.transpose(q, [0, 2, 1, 3]),
                           _a.transpose(k, [0, 2, 3, 1]))                   # (B, H, T, S)
        mask = _attention_mask(query, value, attention_mask, use_causal_mask)
        if mask is not None:
            mask = _a.expand_dims(mask, 1)                                  # (B, 1, T, S)
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



class _BaseDenseAttention(Layer):
    """What ``Attention`` and ``AdditiveAttention`` share (Keras's formulas): scores of each
    query against each key, masked (padding ``mask=[query_mask, value_mask]`` and/or causal),
    softmax over the keys, dropout while training, then the weighted sum of the values;
    padded queries give zero rows."""

    def __init__(self, dropout: float = 0.0, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0 <= float(dropout) < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1); got {dropout}.")
        self.dropout, self.seed = float(dropout), seed

    def _scores(self, query: Tensor, key: Tensor) -> Tensor:
        # the one hook each scoring subclass defines (dot product, additive)
        raise NotImplementedError(f"{type(self).__name__} must define _scores(query, key), "
                                  f"which returns the attention logits.")

    def call(self, inputs: Any, mask: Any = None, training: Any = False,
             return_attention_scores: bool = False, use_causal_mask: bool = False) -> Any:
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, "
                             f"namely [query, value] or [query, value, key]; received "
                             f"{type(inputs).__name__}.")
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        scores = self._scores(query, key)
        q_mask, v_mask = (list(mask) + [None, None])[:2] if mask is not None else (None, None)
        keep = None
        if v_mask is not None:
            keep = _a.expand_dims(_m.cast(v_mask, _dt.bool_), -2)
        if use_causal_mask:
            n_q, n_k = _a.shape(scores)[-2], _a.shape(scores)[-1]
            rows = _a.reshape(_a.range(0, n_q), [1, -1, 1])
            cols = _a.reshape(_a.range(0, n_k), [1, 1, -1])
            causal = _m.greater_equal(rows, cols)
            keep = causal if keep is None else _m.logical_and(keep, causal)
        if keep is not None:
            big = 65504.0 if scores.dtype == _dt.float16 else 1e9
            scores = _m.subtract(scores, _m.multiply(big, _m.cast(_m.logical_not(keep),
                                                                  scores.dtype)))
        weights = _nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = _nn.dropout(weights, self.dropout, seed=self.seed)
        result = _m.matmul(weights, value)
        if q_mask is not None:
            result = _m.multiply(result, _a.expand_dims(_m.cast(q_mask, result.dtype), -1))
        return (result, weights) if return_attention_scores else result

    def get_config(self) -> dict:
        return {**super().get_config(), "dropout": self.dropout, "seed": self.seed}


@serialization.register
class Attention(_BaseDenseAttention):
    """Dot-product (Luong) attention: ``scores = query @ key^T`` (times a learned scalar
    ``scale`` with ``use_scale``); ``score_mode='concat'`` uses ``sum(tanh(query + key))``
    instead, weighted by the scalar ``concat_score_weight``.

    >>> import stagecraft as tf
    >>> q, v = tf.constant([[[1., 0.]]]), tf.constant([[[1., 0.], [0., 1.]]])
    >>> out = tf.keras.layers.Attention()([q, v])
    >>> [round(x, 4) for x in out.numpy().ravel().tolist()]
    [0.7311, 0.2689]
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", dropout: float = 0.0,
                 seed: int | None = None, **kwargs: Any):
        super().__init__(dropout, seed, **kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention: score_mode must be 'dot' or 'concat'; got "
                             f"{score_mode!r}.")
        self.use_scale, self.score_mode = bool(use_scale), score_mode

    def build(self, input_shape: Any) -> None:
        self.scale = self.add_weight("scale", shape=[], initializer="ones") \
            if self.use_scale else None
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", shape=[],
                                                       initializer="ones")
        self.built = True

    def _scores(self, query: Tensor, key: Tensor) -> Tensor:
        if self.score_mode == "dot":
            scores = _m.matmul(query, key, transpose_b=True)
            return scores if self.scale is None else _m.multiply(scores, self.scale)
        summed = _m.add(_a.expand_dims(query, -2), _a.expand_dims(key, -3))
        if self.scale is not None:
            summed = _m.multiply(self.scale, summed)
        return _m.multiply(self.concat_score_weight,
                           _m.reduce_sum(_m.tanh(summed), axis=-1))

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode}


@serialization.register
class AdditiveAttention(_BaseDenseAttention):
    """Additive (Bahdanau) attention: ``scores = sum(scale * tanh(query + key), axis=-1)``
    over pairs of query and key positions, ``scale`` a learned vector (``use_scale``,
    glorot-uniform initialized).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.AdditiveAttention(use_scale=False)
    >>> layer([tf.ones([1, 3, 2]), tf.ones([1, 4, 2])]).shape
    TensorShape([1, 3, 2])
    """

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(dropout, seed, **kwargs)
        self.use_scale = bool(use_scale)

    def build(self, input_shape: Any) -> None:
        key_shape = TensorShape(input_shape[2] if len(input_shape) > 2 else input_shape[1])
        self.scale = self.add_weight("scale", shape=[key_shape[-1]],
                                     initializer="glorot_uniform") if self.use_scale else None
        self.built = True

    def _scores(self, query: Tensor, key: Tensor) -> Tensor:
        summed = _m.tanh(_m.add(_a.expand_dims(query, -2), _a.expand_dims(key, -3)))
        if self.scale is not None:
            summed = _m.multiply(self.scale, summed)
        return _m.reduce_sum(summed, axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale}


@serialization.register
class GroupedQueryAttention(_QueryValueAttention):
    """Grouped-query attention (Ainslie et al., 2023; Keras 3's layer): ``num_query_heads``
    query heads share ``num_key_value_heads`` key/value heads (each repeated for its group),
    scaled dot-product attention per head, then an output projection back to the query's
    last dimension. The projections are ``EinsumDense`` layers ``query``, ``key``, ``value``
    and ``attention_output``; masks are Keras's (``attention_mask`` ``(B, T, S)``,
    ``use_causal_mask``), masked weights are 0.

    >>> import stagecraft as tf
    >>> gqa = tf.keras.layers.GroupedQueryAttention(head_dim=4, num_query_heads=4,
    ...                                             num_key_value_heads=2)
    >>> out, scores = gqa(tf.ones([2, 5, 8]), tf.ones([2, 3, 8]), return_attention_scores=True)
    >>> out.shape, scores.shape
    (TensorShape([2, 5, 8]), TensorShape([2, 4, 5, 3]))
    """

    def __init__(self, head_dim: int, num_query_heads: int, num_key_value_heads: int,
                 dropout: float = 0.0, use_bias: bool = True, flash_attention: Any = None,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        for what, n in (("head_dim", head_dim), ("num_query_heads", num_query_heads),
                        ("num_key_value_heads", num_key_value_heads)):
            if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                raise ValueError(f"GroupedQueryAttention: {what} must be a positive integer; "
                                 f"got {n!r}.")
        if num_query_heads % num_key_value_heads:
            raise ValueError(f"GroupedQueryAttention: num_query_heads ({num_query_heads}) must "
                             f"be a multiple of num_key_value_heads ({num_key_value_heads}).")
        if flash_attention:
            raise ValueError("GroupedQueryAttention: flash_attention=True is not supported; "
                             "leave it None.")
        if not 0 <= float(dropout) < 1:
            raise ValueError(f"GroupedQueryAttention: dropout must be in [0, 1); got {dropout}.")
        self.head_dim, self.num_query_heads = head_dim, num_query_heads
        self.num_key_value_heads = num_key_value_heads
        self.num_repeats = num_query_heads // num_key_value_heads
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _dense(self, equation: str, output_shape: tuple, bias_axes: str, name: str) -> Layer:
        return EinsumDense(equation, output_shape=output_shape,
                           bias_axes=bias_axes if self.use_bias else None,
                           kernel_initializer=self.kernel_initializer,
                           bias_initializer=self.bias_initializer, name=name, dtype=self.dtype)

    def _build_from(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        q, kv, h = self.num_query_heads, self.num_key_value_heads, self.head_dim
        self.feature_dim = int(query.shape[-1])
        self.query = self._dense("bqm,muh->bquh", (None, q, h), "uh", "query")
        self.key = self._dense("bkm,mvh->bkvh", (None, kv, h), "vh", "key")
        self.value = self._dense("bkm,mvh->bkvh", (None, kv, h), "vh", "value")
        self.attention_output = self._dense("bquh,uhm->bqm", (None, self.feature_dim), "m",
                                            "attention_output")

    def _repeat(self, x: Tensor) -> Tensor:
        """Each key/value head repeated for its query group (``np.repeat`` on axis 2)."""
        if self.num_repeats == 1:
            return x
        tiled = _a.tile(_a.expand_dims(x, 3), [1, 1, 1, self.num_repeats, 1])
        shape = _a.shape(x)
        return _a.reshape(tiled, _a.stack([shape[0], shape[1], self.num_query_heads,
                                           self.head_dim]))

    def call(self, query: Tensor, value: Tensor, key: Tensor | None = None,
             attention_mask: Any = None, return_attention_scores: bool = False,
             training: Any = None, use_causal_mask: bool = False) -> Any:
        key, value = self._key_value(query, value, key)
        mask = _attention_mask(query, value, attention_mask, use_causal_mask)
        q = _m.multiply(self.query(query), 1.0 / math.sqrt(self.head_dim))   # (B, T, H, D)
        k, v = self._repeat(self.key(key)), self._repeat(self.value(value))  # (B, S, H, D)
        scores = einsum("bquh,bkuh->buqk", q, k)
        if mask is not None:  # Keras 3's Softmax with a mask: masked weights are 0
            keep = _m.cast(_a.expand_dims(mask, 1), scores.dtype)
            scores = _m.add(scores, _m.multiply(_m.subtract(1.0, keep), -1e9))
        weights = _nn.softmax(scores, axis=-1)
        if mask is not None:
            weights = _m.multiply(weights, keep)
        attended = _nn.dropout(weights, self.dropout, seed=self.seed) \
            if training and self.dropout else weights
        out = self.attention_output(einsum("buqk,bkuh->bquh", attended, v))
        return (out, weights) if return_attention_scores else out

    def get_config(self) -> dict:
        return {**super().get_config(), "head_dim": self.head_dim,
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads, "dropout": self.dropout,
                "use_bias": self.use_bias, "seed": self.seed,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


GroupQueryAttention = GroupedQueryAttention

__all__ += ["AdditiveAttention", "Attention", "GroupQueryAttention", "GroupedQueryAttention"]
