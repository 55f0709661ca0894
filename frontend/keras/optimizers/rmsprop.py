"""``RMSprop`` and ``Adagrad``: per-coordinate step sizes from accumulated squared
gradients."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.initializers import Constant
from stagecraft.keras.optimizers.optimizer import Optimizer, _is_number
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable


class RMSprop(Optimizer):
    """RMSprop (TF 2 Keras's formulas): ``rms = rho * rms + (1 - rho) * g*g``; plain:
    ``var -= lr * g / (sqrt(rms) + epsilon)``; with ``momentum``: ``mom = momentum * mom +
    lr * g / sqrt(rms + epsilon)``, ``var -= mom``; ``centered`` subtracts the square of the
    mean gradient ``mg = rho * mg + (1 - rho) * g`` from ``rms`` in the denominator.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.RMSprop(learning_rate=0.1, rho=0.5)
    >>> _ = opt.apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)  # rms = 2, step = 0.1 * 2 / sqrt(2)
    0.8586
    """

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.9, momentum: Any = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
                 **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("rho", rho)
        self._momentum = not _is_number(momentum) or momentum > 0
        self._set_hyper("momentum", momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "rms")
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum")
        if self.centered:
            for var in var_list:
                self.add_slot(var, "mg")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        rho = self._get_hyper("rho", dtype)
        out.update(rho=rho, one_minus_rho=_m.subtract(1.0, rho),
                   momentum=self._get_hyper("momentum", dtype),
                   epsilon=convert_to_tensor(self.epsilon, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        rms = self.get_slot(var, "rms")
        rms.assign(_m.add(_m.multiply(c["rho"], rms), _m.multiply(c["one_minus_rho"],
                                                                  _m.square(grad))))
        denom: Any = rms
        if self.centered:
            mg = self.get_slot(var, "mg")
            mg.assign(_m.add(_m.multiply(c["rho"], mg), _m.multiply(c["one_minus_rho"], grad)))
            denom = _m.subtract(rms, _m.square(mg))
        if self._momentum:
            mom = self.get_slot(var, "momentum")
            mom.assign(_m.add(_m.multiply(c["momentum"], mom),
                              _m.truediv(_m.multiply(c["lr_t"], grad),
                                         _m.sqrt(_m.add(denom, c["epsilon"])))))
            var.assign_sub(mom)
            return
        var.assign_sub(_m.truediv(_m.multiply(c["lr_t"], grad),
                                  _m.add(_m.sqrt(denom), c["epsilon"])))

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon, "centered": self.centered}


class Adagrad(Optimizer):
    """Adagrad (TF 2 Keras's formulas): ``acc += g*g`` (``acc`` starts at
    ``initial_accumulator_value``), ``var -= lr * g / (sqrt(acc) + epsilon)``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.Adagrad(learning_rate=0.1, initial_accumulator_value=0.0)
    >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 4)
    0.9
    """

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any):
        if initial_accumulator_value < 0.0:
            raise ValueError(f"Adagrad: initial_accumulator_value must be non-negative; got "
                             f"{initial_accumulator_value}.")
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "accumulator", Constant(self.initial_accumulator_value))

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        return {**super()._prepare(dtype), "epsilon": convert_to_tensor(self.epsilon, dtype)}

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        acc = self.get_slot(var, "accumulator")
        acc.assign_add(_m.square(grad))
        var.assign_sub(_m.truediv(_m.multiply(coefficients["lr_t"], grad),
                                  _m.add(_m.sqrt(acc), coefficients["epsilon"])))

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon,
                "initial_accumulator_value": self.initial_accumulator_value}
