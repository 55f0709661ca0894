"""Adadelta and Ftrl, with TF 2 Keras's update rules (the ``ResourceApplyAdadelta`` and
``ResourceApplyFtrl(V2)`` kernels) and slot names."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.initializers import Constant
from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable

__all__ = ["Adadelta", "Ftrl"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012; TF 2 Keras's formulas):
    ``acc = rho * acc + (1 - rho) * g^2``,
    ``update = sqrt(acc_update + epsilon) / sqrt(acc + epsilon) * g``,
    ``acc_update = rho * acc_update + (1 - rho) * update^2``, ``var -= lr * update``.
    Slots ``accum_grad`` and ``accum_var``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.Adadelta(learning_rate=1.0, rho=0.5, epsilon=1e-2)
    >>> _ = opt.apply_gradients([(tf.constant(1.0), v)])
    >>> round(float(v), 4)  # 1 - sqrt(0.01) / sqrt(0.51)
    0.86
    """

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: float = 1e-7,
                 name: str = "Adadelta", **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("rho", rho)
        self.epsilon = float(epsilon)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "accum_grad")
        for var in var_list:
            self.add_slot(var, "accum_var")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        return {**super()._prepare(dtype), "rho": self._get_hyper("rho", dtype),
                "epsilon": convert_to_tensor(self.epsilon, dtype)}

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        rho, eps = coefficients["rho"], coefficients["epsilon"]
        acc, acc_update = self.get_slot(var, "accum_grad"), self.get_slot(var, "accum_var")
        acc.assign(_m.add(_m.multiply(rho, acc),
                          _m.multiply(_m.subtract(1.0, rho), _m.square(grad))))
        update = _m.multiply(_m.truediv(_m.sqrt(_m.add(acc_update, eps)),
                                        _m.sqrt(_m.add(acc, eps))), grad)
        acc_update.assign(_m.add(_m.multiply(rho, acc_update),
                                 _m.multiply(_m.subtract(1.0, rho), _m.square(update))))
        var.assign_sub(_m.multiply(coefficients["lr_t"], update))

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon}


class Ftrl(Optimizer):
    """Follow The Regularized Leader (McMahan et al., 2013), TF's ``ApplyFtrlV2``:
    with ``g' = g + 2 * l2_shrinkage * var``, ``n' = n + g^2`` and ``p = -learning_rate_power``,
    ``z += g' - (n'^p - n^p) / lr * var``, then
    ``var = (sign(z) * l1 - z) / (n'^p / lr + 2 * l2)`` where ``|z| > l1``, else 0
    (``l2`` is ``l2_regularization_strength + beta / (2 lr)``). Slots ``accumulator``
    (starting at ``initial_accumulator_value``) and ``linear``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.Ftrl(learning_rate=0.5, initial_accumulator_value=1.0)
    >>> _ = opt.apply_gradients([(tf.constant(1.0), v)])
    >>> round(float(v), 4)  # z = 1 - (sqrt(2) - 1) / 0.5; var = -z / (sqrt(2) / 0.5)
    -0.0607
    """

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl",
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float = 0.0,
                 **kwargs: Any):
        for what, value in (("initial_accumulator_value", initial_accumulator_value),
                            ("l1_regularization_strength", l1_regularization_strength),
                            ("l2_regularization_strength", l2_regularization_strength),
                            ("l2_shrinkage_regularization_strength",
                             l2_shrinkage_regularization_strength), ("beta", beta)):
            if value < 0.0:
                raise ValueError(f"Ftrl: {what} must be non-negative; got {value}.")
        if learning_rate_power > 0.0:
            raise ValueError(f"Ftrl: learning_rate_power must be less than or equal to 0; got "
                             f"{learning_rate_power}.")
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("learning_rate_power", learning_rate_power)
        self._set_hyper("l1_regularization_strength", l1_regularization_strength)
        self._set_hyper("l2_regularization_strength", l2_regularization_strength)
        self._set_hyper("beta", beta)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "accumulator", Constant(self.initial_accumulator_value))
            self.add_slot(var, "linear")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        l2 = _m.add(self._get_hyper("l2_regularization_strength", dtype),
                    _m.truediv(self._get_hyper("beta", dtype), _m.multiply(2.0, out["lr_t"])))
        out.update(power=_m.negative(self._get_hyper("learning_rate_power", dtype)),
                   l1=self._get_hyper("l1_regularization_strength", dtype), l2=l2,
                   shrinkage=convert_to_tensor(self.l2_shrinkage_regularization_strength,
                                               dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        acc, linear = self.get_slot(var, "accumulator"), self.get_slot(var, "linear")
        shrunk = _m.add(grad, _m.multiply(_m.multiply(2.0, c["shrinkage"]), var))
        acc_new = _m.add(acc, _m.square(grad))
        sigma = _m.truediv(_m.subtract(_m.pow(acc_new, c["power"]), _m.pow(acc, c["power"])),
                           c["lr_t"])
        linear.assign(_m.subtract(_m.add(linear, shrunk), _m.multiply(sigma, var)))
        quadratic = _m.add(_m.truediv(_m.pow(acc_new, c["power"]), c["lr_t"]),
                           _m.multiply(2.0, c["l2"]))
        z = linear.read_value()
        solved = _m.truediv(_m.subtract(_m.multiply(_m.sign(z), c["l1"]), z), quadratic)
        var.assign(_m.where(_m.greater(_m.abs(z), c["l1"]), solved, _m.multiply(z, 0.0)))
        acc.assign(acc_new)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength}
