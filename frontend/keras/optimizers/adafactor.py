"""Adafactor (Shazeer and Stern, 2018) with Keras's update rule: second moments of a
matrix are kept factored, as row and column means, so its state costs O(n + m), not O(nm)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable

__all__ = ["Adafactor"]


def _rms(x: Any) -> Tensor:
    return _m.sqrt(_m.reduce_mean(_m.square(x)))


class Adafactor(Optimizer):
    """Adafactor (Keras's formulas; ``t`` counts steps from 1):
    ``rho = min(lr, 1 / sqrt(t))`` (and, with ``relative_step`` and a constant learning rate,
    ``lr`` itself is capped the same way), ``alpha = max(epsilon_2, rms(var)) * rho``,
    ``beta = 1 - t^beta_2_decay``, ``g2 = g^2 + epsilon_1``. A variable of rank >= 2 keeps
    ``r = beta r + (1 - beta) mean(g2, -1)`` and ``c = beta c + (1 - beta) mean(g2, -2)`` and
    sets ``v = r / mean(r) (outer) c``; others keep ``v = beta v + (1 - beta) g2``. Then
    ``u = g / sqrt(v)``, ``var -= alpha * u / max(1, rms(u) / clip_threshold)``. Slots ``r``,
    ``c`` (rank >= 2 only) and ``v``.

    >>> import stagecraft as tf
    >>> v = tf.Variable([[1.0, 1.0], [1.0, 1.0]])
    >>> opt = tf.keras.optimizers.Adafactor(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(tf.ones([2, 2]), v)])
    >>> [round(x, 4) for x in v.numpy().ravel().tolist()]  # moved by alpha = 0.1
    [0.9, 0.9, 0.9, 0.9]
    """

    def __init__(self, learning_rate: Any = 0.001, beta_2_decay: float = -0.8,
                 epsilon_1: float = 1e-30, epsilon_2: float = 1e-3,
                 clip_threshold: float = 1.0, relative_step: bool = True,
                 name: str = "Adafactor", **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1, self.epsilon_2 = float(epsilon_1), float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            dims = var.shape.as_list()
            if len(dims) >= 2:
                self.add_slot(var, "r", shape=dims[:-1])
                self.add_slot(var, "c", shape=dims[:-2] + dims[-1:])
            self.add_slot(var, "v")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        step = _m.cast(_m.add(self.iter.read_value(), 1), dtype)
        cap = _m.rsqrt(step)
        lr = out["lr_t"]
        if self.relative_step and not callable(self.learning_rate):
            lr = _m.minimum(lr, cap)
        out.update(rho=_m.minimum(lr, cap),
                   beta=_m.subtract(1.0, _m.pow(step, self.beta_2_decay)),
                   epsilon_1=convert_to_tensor(self.epsilon_1, dtype),
                   epsilon_2=convert_to_tensor(self.epsilon_2, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        beta = c["beta"]
        alpha = _m.multiply(_m.maximum(c["epsilon_2"], _rms(var)), c["rho"])
        g2 = _m.add(_m.square(grad), c["epsilon_1"])
        v = self.get_slot(var, "v")

        def mix(old: Any, new: Tensor) -> Tensor:
            return _m.add(_m.multiply(beta, old), _m.multiply(_m.subtract(1.0, beta), new))
        if var.shape.rank >= 2:
            r, col = self.get_slot(var, "r"), self.get_slot(var, "c")
            r.assign(mix(r, _m.reduce_mean(g2, axis=-1)))
            col.assign(mix(col, _m.reduce_mean(g2, axis=-2)))
            row = _m.truediv(r, _m.reduce_mean(r, axis=-1, keepdims=True))
            v.assign(_m.multiply(_a.expand_dims(row, -1), _a.expand_dims(col, -2)))
        else:
            v.assign(mix(v, g2))
        u = _m.truediv(grad, _m.sqrt(v))
        u = _m.truediv(u, _m.maximum(1.0, _m.truediv(_rms(u), self.clip_threshold)))
        var.assign_sub(_m.multiply(alpha, u))

    def get_config(self) -> dict:
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold, "relative_step": self.relative_step}
