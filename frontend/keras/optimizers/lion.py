"""Lion and Lamb, with Keras's update rules (these optimizers are Keras 3's, in
TensorFlow 2.16+); first and second moments are slots ``m`` and ``v`` like Adam's."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.optimizers.adam import _Moments
from stagecraft.keras.optimizers.optimizer import Optimizer, _is_number
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable

__all__ = ["Lamb", "Lion"]


class Lion(Optimizer):
    """Lion (Chen et al., 2023, "EvoLved Sign Momentum"):
    ``var -= lr * sign(beta_1 * m + (1 - beta_1) * g)``, then
    ``m = beta_2 * m + (1 - beta_2) * g``. Every step moves each weight by exactly ``lr``
    (or 0), so Lion wants a smaller learning rate than Adam. Slot ``m``.

    >>> import stagecraft as tf
    >>> v = tf.Variable([1.0, 1.0])
    >>> opt = tf.keras.optimizers.Lion(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(tf.constant([3.0, -0.5]), v)])
    >>> [round(x, 4) for x in v.numpy().tolist()]
    [0.9, 1.1]
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: Any = 0.9, beta_2: Any = 0.99,
                 name: str = "Lion", **kwargs: Any):
        if _is_number(beta_1) and not 0 < beta_1 <= 1:
            raise ValueError(f"Lion: beta_1 must be in (0, 1]; got {beta_1}. With beta_1 = 0 "
                             f"the update ignores the momentum (use SGD on sign(g) instead).")
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "m")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        return {**super()._prepare(dtype), "beta_1": self._get_hyper("beta_1", dtype),
                "beta_2": self._get_hyper("beta_2", dtype)}

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        b1, b2 = coefficients["beta_1"], coefficients["beta_2"]
        m = self.get_slot(var, "m")
        direction = _m.sign(_m.add(_m.multiply(b1, m), _m.multiply(_m.subtract(1.0, b1), grad)))
        var.assign_sub(_m.multiply(coefficients["lr_t"], direction))
        m.assign(_m.add(_m.multiply(b2, m), _m.multiply(_m.subtract(1.0, b2), grad)))


class Lamb(_Moments):
    """Lamb (You et al., 2019): Adam's bias-corrected step ``u = m_hat / (sqrt(v_hat) +
    epsilon)``, rescaled per variable by the trust ratio ``||var|| / ||u||`` (1 where either
    norm is 0): ``var -= lr * ratio * u``. Slots ``m`` and ``v``.

    >>> import stagecraft as tf
    >>> v = tf.Variable([3.0, 4.0])
    >>> _ = tf.keras.optimizers.Lamb(0.1).apply_gradients([(tf.constant([1.0, 1.0]), v)])
    >>> [round(x, 3) for x in v.numpy().tolist()]  # ratio = 5 / sqrt(2)
    [2.646, 3.646]
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: Any = 0.9, beta_2: Any = 0.999,
                 epsilon: float = 1e-7, name: str = "Lamb", **kwargs: Any):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        step = _m.cast(_m.add(self.iter.read_value(), 1), dtype)
        beta_1, beta_2 = self._get_hyper("beta_1", dtype), self._get_hyper("beta_2", dtype)
        out.update(beta_1=beta_1, beta_2=beta_2,
                   correction_1=_m.subtract(1.0, _m.pow(beta_1, step)),
                   correction_2=_m.subtract(1.0, _m.pow(beta_2, step)),
                   epsilon=convert_to_tensor(self.epsilon, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        m, v = self._update_moments(grad, var, c)
        update = _m.truediv(_m.truediv(m, c["correction_1"]),
                            _m.add(_m.sqrt(_m.truediv(v, c["correction_2"])), c["epsilon"]))
        w_norm = _m.sqrt(_m.reduce_sum(_m.square(var)))
        u_norm = _m.sqrt(_m.reduce_sum(_m.square(update)))
        both = _m.logical_and(_m.greater(w_norm, 0.0), _m.greater(u_norm, 0.0))
        # The ratio where both norms are positive (the divisor kept nonzero elsewhere).
        ratio = _m.where(both, _m.truediv(w_norm, _m.where(both, u_norm, 1.0)), 1.0)
        var.assign_sub(_m.multiply(_m.multiply(c["lr_t"], ratio), update))
