"""Layers built around other weights or layers: ``ReversibleEmbedding`` (an embedding whose
transpose maps hidden states back to token logits, Keras 3's), ``SpectralNormalization``
(a wrapper that divides a layer's kernel by its spectral norm while training, Miyato et al.
2018) and ``TFSMLayer`` (a SavedModel's endpoint as a layer)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.basic_layers import Embedding
from stagecraft.keras.rnn_wrappers import Wrapper
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.staging.cond import cond
from stagecraft.state.saved_model.functions import SignatureFunction
from stagecraft.state.saved_model.objects import UserObject
from stagecraft.state.variables import Variable

__all__ = ["ReversibleEmbedding", "SpectralNormalization", "TFSMLayer"]


@serialization.register
class ReversibleEmbedding(Embedding):
    """An ``Embedding`` that also runs backwards: ``layer(hidden, reverse=True)`` is ``hidden @
    embeddings^T`` (``tie_weights=True``) or ``hidden @ reverse_embeddings`` (a separate
    ``(output_dim, input_dim)`` weight), the logits over the vocabulary, optionally
    soft-capped as ``tanh(logits / cap) * cap``.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.ReversibleEmbedding(10, 4)
    >>> hidden = layer(tf.constant([[1, 2, 3]]))
    >>> hidden.shape, layer(hidden, reverse=True).shape
    (TensorShape([1, 3, 4]), TensorShape([1, 3, 10]))
    """

    def __init__(self, input_dim: int, output_dim: int, tie_weights: bool = True,
                 embeddings_initializer: Any = "uniform", embeddings_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 reverse_dtype: Any = None, logit_soft_cap: float | None = None,
                 **kwargs: Any):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                         **kwargs)
        if reverse_dtype is not None:
            raise ValueError("ReversibleEmbedding: reverse_dtype is not supported; the reverse "
                             "pass runs in the layer's dtype.")
        self.tie_weights = bool(tie_weights)
        self.logit_soft_cap = None if logit_soft_cap is None else float(logit_soft_cap)

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(
                "reverse_embeddings", [self.output_dim, self.input_dim],
                initializer=self.embeddings_initializer)

    def _convert_input(self, x: Any) -> Any:
        # Token ids stay integers; hidden states (the reverse pass) take the layer's dtype.
        x = super()._convert_input(x)
        return Layer._convert_input(self, x) if x.dtype.is_floating else x

    def call(self, inputs: Tensor, reverse: bool = False) -> Tensor:
        if not reverse:
            return super().call(inputs)
        kernel = _a.transpose(self.embeddings) if self.tie_weights else self.reverse_embeddings
        logits = _m.matmul(inputs, kernel)
        if self.logit_soft_cap is not None:
            cap = self.logit_soft_cap
            logits = _m.multiply(_m.tanh(_m.truediv(logits, cap)), cap)
        return logits

    def get_config(self) -> dict:
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "logit_soft_cap": self.logit_soft_cap}


@serialization.register
class SpectralNormalization(Wrapper):
    """Keeps the wrapped layer's ``kernel`` at spectral norm about 1 (Keras 3's rule): while
    training, ``power_iterations`` steps of the power method refine the singular vector
    ``vector_u`` (a non-trainable ``(1, units)`` weight), and the kernel, reshaped to
    ``(-1, units)``, is divided by ``sigma = v W u^T`` and assigned back, before the layer
    runs. Inference uses the kernel as it is.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.SpectralNormalization(tf.keras.layers.Dense(3))
    >>> layer(tf.ones([2, 4]), training=True).shape, layer.vector_u.shape
    (TensorShape([2, 3]), TensorShape([1, 3]))
    """

    def __init__(self, layer: Layer, power_iterations: int = 1, **kwargs: Any):
        super().__init__(layer, **kwargs)
        if isinstance(power_iterations, bool) or not isinstance(power_iterations, int) or \
                power_iterations < 1:
            raise ValueError(f"SpectralNormalization: power_iterations must be a positive "
                             f"integer; got {power_iterations!r}.")
        self.power_iterations = power_iterations

    def build(self, input_shape: Any) -> None:
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            raise ValueError(f"SpectralNormalization: the wrapped layer "
                             f"{type(self.layer).__name__} has no `kernel` weight.")
        self.kernel_shape = kernel.shape.as_list()
        self.vector_u = self.add_weight(
            "vector_u", [1, self.kernel_shape[-1]],
            initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False)
        self.built = True

    def _normalized(self) -> tuple[Tensor, Tensor]:
        kernel = self.layer.kernel
        weights = _a.reshape(kernel, [-1, self.kernel_shape[-1]])
        u = self.vector_u.read_value()
        v = u
        for _ in range(self.power_iterations):
            v = _nn.l2_normalize(_m.matmul(u, weights, transpose_b=True))
            u = _nn.l2_normalize(_m.matmul(v, weights))
        u, v = _a.stop_gradient(u), _a.stop_gradient(v)
        sigma = _m.matmul(_m.matmul(v, weights), u, transpose_b=True)
        return u, _a.reshape(_m.truediv(kernel, sigma), self.kernel_shape)

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        if training:
            kernel = self.layer.kernel

            def update() -> Tensor:
                u, new_kernel = self._normalized()
                self.vector_u.assign(u)
                kernel.assign(new_kernel)
                return _m.reduce_sum(u)

            def keep() -> Tensor:  # an all-zero kernel has no direction to normalize
                return _m.reduce_sum(self.vector_u.read_value())
            cond(_m.reduce_any(_m.not_equal(kernel, 0.0)), update, keep)
        return self.layer(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "power_iterations": self.power_iterations}


def _variables_of(obj: Any, seen: set[int] | None = None) -> list[Variable]:
    """The variables reachable from a restored SavedModel object's attributes, once each."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, Variable):
        return [obj]
    found: list[Variable] = []
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        children = list(obj)
    elif isinstance(obj, UserObject):  # the restored objects; functions are not walked
        children = [v for k, v in vars(obj).items() if not k.startswith("_")]
    else:
        children = []
    for child in children:
        found += _variables_of(child, seen)
    return found


class _VariableList:
    """The restored variables, opaque to module reflection (they are listed by ``weights``
    through ``_own_weights``, not found twice)."""

    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items


@serialization.register
class TFSMLayer(Layer):
    """An endpoint of a SavedModel as a layer (Keras 3's, for inference and fine-tuning):
    ``call_endpoint`` names a function attribute of the restored object or one of its
    ``signatures`` (called with the single input as its only keyword); while training,
    ``call_training_endpoint`` if given. The SavedModel's variables are the layer's weights.

    >>> import stagecraft as tf, tempfile, os
    >>> class Double(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    ...     def serve(self, x):
    ...         return x * 2.0
    >>> path = os.path.join(tempfile.mkdtemp(), "double")
    >>> tf.saved_model.save(Double(), path)
    >>> tf.keras.layers.TFSMLayer(path)(tf.constant([1., 2.])).numpy().tolist()
    [2.0, 4.0]
    """

    def __init__(self, filepath: str, call_endpoint: str = "serve",
                 call_training_endpoint: str | None = None, trainable: bool = True,
                 name: str | None = None, dtype: Any = None):
        super().__init__(trainable=trainable, name=name, dtype=dtype)
        from stagecraft.state.saved_model.loading import load  # only when used: it is large
        self.filepath, self.call_endpoint = str(filepath), call_endpoint
        self.call_training_endpoint = call_training_endpoint
        reloaded = load(self.filepath)
        self._endpoint = self._resolve(reloaded, call_endpoint)
        self._training_endpoint = None if call_training_endpoint is None else \
            self._resolve(reloaded, call_training_endpoint)
        self._restored = _VariableList(_variables_of(reloaded))
        self.built = True

    _TF_MODULE_IGNORED_PROPERTIES = Layer._TF_MODULE_IGNORED_PROPERTIES | frozenset(
        ("_endpoint", "_training_endpoint"))

    @staticmethod
    def _resolve(reloaded: Any, endpoint: str) -> Any:
        fn = getattr(reloaded, endpoint, None)
        if fn is not None and callable(fn):
            return fn
        signatures = getattr(reloaded, "signatures", {}) or {}
        if endpoint in signatures:
            return signatures[endpoint]
        raise ValueError(f"The endpoint '{endpoint}' is neither an attribute of the reloaded "
                         f"SavedModel, nor an entry in the `signatures` field of the reloaded "
                         f"SavedModel. Select another endpoint via the `call_endpoint` "
                         f"argument. Available endpoints for this SavedModel: "
                         f"{list(signatures)}")

    def _own_weights(self) -> list[Variable]:
        return list(self._restored.items)

    def call(self, inputs: Any, training: Any = False, **kwargs: Any) -> Any:
        fn = self._training_endpoint if training and self._training_endpoint is not None \
            else self._endpoint
        if not isinstance(fn, SignatureFunction):
            return fn(inputs, **kwargs)
        if isinstance(inputs, dict):  # a signature takes its inputs by name
            return fn(**inputs, **kwargs)
        names = list(fn.structured_input_signature[1])
        if len(names) != 1:
            raise ValueError(f"{self.name}: the signature takes inputs {names}; call the layer "
                             f"with a dict of them.")
        return fn(**{names[0]: inputs}, **kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), "filepath": self.filepath,
                "call_endpoint": self.call_endpoint,
                "call_training_endpoint": self.call_training_endpoint}
