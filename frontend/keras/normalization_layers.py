"""Keras's ``BatchNormalization`` layer, with Keras's arguments, defaults, weight names
(``gamma``, ``beta``, ``moving_mean``, ``moving_variance``: a TensorFlow checkpoint's names)
and modes."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.context import STATE
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import initializers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.core_layers import BETA_GAMMA, set_weight_options, weight_options_config
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import normalization_ops as _norm

__all__ = ["BatchNormalization"]



def _python_training(training: Any, layer: str) -> bool:
    """``training`` as a Python bool (None: inference; an eager tensor: its value)."""
    if training is None or isinstance(training, (bool, int)):
        return bool(training)
    if isinstance(training, Tensor) and STATE.get().graph is None:
        return bool(training.numpy())
    raise ValueError(f"{layer}: `training` must be a Python bool (or an eager tensor) so the "
                     f"layer knows whether to update its moving statistics; got {training!r}. "
                     f"Pass training=True/False, or call the layer under tf.cond yourself.")


@serialization.register
class BatchNormalization(Layer):
    """Normalizes each feature (the ``axis`` dims) over the batch: ``gamma * (x - mean) /
    sqrt(var + epsilon) + beta``.

    Training (``training=True``, as ``fit`` calls it; an enclosing layer called with
    ``training=True`` passes it on): ``mean``/``var`` are the batch's, and the moving
    statistics move toward them: ``moving = moving * momentum + batch * (1 - momentum)`` (an
    assignment, eagerly and inside ``tf.function``). Inference (the default): the moving
    statistics are used. A layer with ``trainable = False`` always runs in inference mode, as
    in TensorFlow 2. On rank-4 and rank-5 inputs normalized over their channels (Keras's
    fused case, unless ``fused=False``) the moving variance takes the batch variance with
    Bessel's correction ``n / (n - 1)``; elsewhere the biased one, as Keras does.

    >>> import stagecraft as tf
    >>> bn = tf.keras.layers.BatchNormalization(momentum=0.5, epsilon=0.0)
    >>> bn(tf.constant([[1.0], [3.0]]), training=True).numpy().ravel().tolist()
    [-1.0, 1.0]
    >>> bn.moving_mean.numpy().tolist(), bn.moving_variance.numpy().tolist()
    ([1.0], [1.0])
    >>> bn(tf.constant([[1.0]])).numpy().ravel().tolist()  # inference: (1 - 1) / sqrt(1)
    [0.0]
    """

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, synchronized: bool = False,
                 fused: bool | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if synchronized:
            raise ValueError("BatchNormalization: synchronized=True (statistics across devices "
                             "of a distribution strategy) is not supported by stagecraft; use "
                             "synchronized=False.")
        if fused not in (None, True, False):
            raise ValueError(f"BatchNormalization: fused must be None, True or False. "
                             f"Received: fused={fused!r}.")
        self.fused = fused
        set_weight_options(self, beta_regularizer=beta_regularizer,
                           gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                           gamma_constraint=gamma_constraint)
        if isinstance(axis, (list, tuple)):
            self.axis: Any = [int(a) for a in axis]
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"BatchNormalization: axis must be an int or a list of ints. "
                            f"Received: axis={axis!r}.")
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def _axes(self, rank: int | None) -> list[int]:
        if rank is None:
            raise ValueError(f"Input has undefined rank: layer {self.name!r} "
                             f"(BatchNormalization) needs inputs of known rank.")
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(f"Invalid axis: {a} for layer {self.name!r}: the input has "
                                 f"rank {rank}, so axis must be in [{-rank}, {rank}).")
        out = sorted({a % rank for a in axes})
        if len(out) != len(axes):
            raise ValueError(f"Duplicate axis: {self.axis} for layer {self.name!r}.")
        return out

    def build(self, input_shape: Any) -> None:
        """Creates ``gamma`` and ``beta`` (trainable, when ``scale``/``center``) and
        ``moving_mean``/``moving_variance`` (not trainable), shaped like the normalized dims."""
        shape = TensorShape(input_shape)
        axes = self._axes(shape.rank)
        self._fused(shape.rank, axes)  # fused=True on an input it cannot take fails here
        dims = [shape[a] for a in axes]
        if None in dims:
            raise ValueError(f"Axis {axes} of input tensor should have a defined dimension but "
                             f"the layer {self.name!r} received an input with shape {shape}.")
        # One axis: a vector of its size; several: the input's rank with ones elsewhere.
        param = dims if len(axes) == 1 else [shape[a] if a in axes else 1
                                             for a in range(shape.rank)]
        self.gamma = self.add_weight("gamma", param, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) \
            if self.scale else None
        self.beta = self.add_weight("beta", param, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) \
            if self.center else None
        self.moving_mean = self.add_weight("moving_mean", param,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", param,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        """Normalizes ``inputs``; in training mode also updates the moving statistics."""
        rank = inputs.shape.rank
        axes = self._axes(rank)
        broadcast = [inputs.shape[a] if a in axes else 1 for a in range(rank)]

        def view(w: Any) -> Any:
            return None if w is None else _a.reshape(w, broadcast)

        training = _python_training(training, self.name) and self.trainable
        if not training:
            return _norm.batch_normalization(inputs, view(self.moving_mean),
                                             view(self.moving_variance), view(self.beta),
                                             view(self.gamma), self.epsilon)
        reduce = [a for a in range(rank) if a not in axes]
        mean = _m.reduce_mean(inputs, axis=reduce, keepdims=True)
        variance = _m.reduce_mean(_m.square(_m.subtract(inputs, mean)), axis=reduce,
                                  keepdims=True)
        outputs = _norm.batch_normalization(inputs, mean, variance, view(self.beta),
                                            view(self.gamma), self.epsilon)
        self._update_moving(mean, variance, inputs, reduce, rank, axes)
        return outputs

    def _update_moving(self, mean: Tensor, variance: Tensor, inputs: Tensor, reduce: list,
                       rank: int, axes: list) -> None:
        shape = self.moving_mean.shape.as_list()
        if self._fused(rank, axes):  # Keras's fused kernel: the unbiased batch variance
            variance = _norm.bessel_correction(variance, inputs, reduce)
        decay = 1.0 - self.momentum
        for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
            value = _a.stop_gradient(_a.reshape(value, shape))
            var.assign_sub(_m.multiply(_m.subtract(var, value), decay))

    def _fused(self, rank: int, axes: list) -> bool:
        """Whether Keras would run its fused kernel: rank 4 or 5 normalized over the channels
        (last or first), unless ``fused=False``; ``fused=True`` insists on it."""
        possible = rank in (4, 5) and axes in ([rank - 1], [1])
        if self.fused and not possible:
            raise ValueError(f"Layer {self.name!r} (BatchNormalization): fused=True needs a "
                             f"rank-4 or rank-5 input normalized over its first or last "
                             f"feature axis; got rank {rank} and axis {self.axis}. Use "
                             f"fused=None.")
        return possible and self.fused is not False

    def get_config(self) -> dict:
        fused = {} if self.fused is None else {"fused": self.fused}
        return {**super().get_config(), **fused, "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer":
                    initializers.serialize(self.moving_variance_initializer),
                **weight_options_config(self, *BETA_GAMMA)}
