"""``SGD``: gradient descent with momentum and Nesterov momentum."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.optimizers.optimizer import Optimizer, _is_number
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable


class SGD(Optimizer):
    """Gradient descent with optional momentum (TF 2 Keras's formulas).

    Plain: ``var -= lr * g``. With ``momentum > 0`` a ``momentum`` slot ``m`` per variable:
    ``m = momentum * m - lr * g``, then ``var += m`` (or, with ``nesterov=True``,
    ``var += momentum * m - lr * g``).

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.SGD(learning_rate=0.5, momentum=0.5)
    >>> for _ in range(2):
    ...     _ = opt.apply_gradients([(tf.constant(1.0), v)])
    >>> float(v)  # m: -0.5 then -0.75
    -0.25
    """

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str = "SGD", **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        if _is_number(momentum) and not 0 <= momentum <= 1:
            raise ValueError(f"SGD: `momentum` must be between [0, 1]. Received: "
                             f"momentum={momentum} (of type {type(momentum).__name__}).")
        self._momentum = not _is_number(momentum) or momentum > 0
        self._set_hyper("momentum", momentum)
        self.nesterov = bool(nesterov)

    def _create_slots(self, var_list: list[Variable]) -> None:
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        out["momentum"] = self._get_hyper("momentum", dtype)
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        lr = coefficients["lr_t"]
        if not self._momentum:
            var.assign_sub(_m.multiply(grad, lr))
            return
        momentum = coefficients["momentum"]
        accum = self.get_slot(var, "momentum")
        accum.assign(_m.subtract(_m.multiply(accum, momentum), _m.multiply(grad, lr)))
        if self.nesterov:
            var.assign_add(_m.subtract(_m.multiply(accum, momentum), _m.multiply(grad, lr)))
        else:
            var.assign_add(accum)

    def get_config(self) -> dict:
        return {**super().get_config(), "nesterov": self.nesterov}
