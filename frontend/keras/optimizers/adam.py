"""The Adam family: ``Adam`` (and AMSGrad), ``AdamW``, ``Adamax``, ``Nadam``."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.optimizers.optimizer import Optimizer, _is_number
from stagecraft.ops import math_ops as _m
from stagecraft.state.variables import Variable


class Adam(Optimizer):
    """Adam (TF 2 Keras's formulas; ``t`` counts steps from 1):
    ``m += (g - m) * (1 - beta_1)``, ``v += (g*g - v) * (1 - beta_2)``,
    ``var -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)``.
    With ``amsgrad=True`` a ``vhat = max(vhat, v)`` slot replaces ``v`` in the denominator.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> opt = tf.keras.optimizers.Adam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(tf.constant(3.0), v)])
    >>> round(float(v), 5)  # the first step moves by about lr
    0.9
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: Any = 0.9, beta_2: Any = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
                 **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _create_slots(self, var_list: list[Variable]) -> None:
        # All m slots first, then all v (then vhat): TensorFlow's creation order.
        for var in var_list:
            self.add_slot(var, "m")
        for var in var_list:
            self.add_slot(var, "v")
        if self.amsgrad:
            for var in var_list:
                self.add_slot(var, "vhat")

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        step = _m.cast(_m.add(self.iter.read_value(), 1), dtype)
        beta_1, beta_2 = self._get_hyper("beta_1", dtype), self._get_hyper("beta_2", dtype)
        beta_1_power, beta_2_power = _m.pow(beta_1, step), _m.pow(beta_2, step)
        out.update(
            beta_1_t=beta_1, beta_2_t=beta_2,
            one_minus_beta_1_t=_m.subtract(1.0, beta_1),
            one_minus_beta_2_t=_m.subtract(1.0, beta_2),
            alpha=_m.multiply(out["lr_t"], _m.truediv(_m.sqrt(_m.subtract(1.0, beta_2_power)),
                                                      _m.subtract(1.0, beta_1_power))),
            epsilon=convert_to_tensor(self.epsilon, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign_add(_m.multiply(_m.subtract(grad, m), coefficients["one_minus_beta_1_t"]))
        v.assign_add(_m.multiply(_m.subtract(_m.square(grad), v),
                                 coefficients["one_minus_beta_2_t"]))
        denom_v: Any = v
        if self.amsgrad:
            vhat = self.get_slot(var, "vhat")
            vhat.assign(_m.maximum(vhat, v))
            denom_v = vhat
        var.assign_sub(_m.truediv(_m.multiply(m, coefficients["alpha"]),
                                  _m.add(_m.sqrt(denom_v), coefficients["epsilon"])))

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay (Keras's ``AdamW``): before each Adam step,
    ``var -= lr * weight_decay * var``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.AdamW(0.1, weight_decay=0.5).apply_gradients([(tf.constant(0.0), v)])
    >>> round(float(v), 4)  # decayed by lr * wd; a zero gradient moves it no further
    0.95
    """

    def __init__(self, learning_rate: Any = 0.001, weight_decay: Any = 0.004,
                 beta_1: Any = 0.9, beta_2: Any = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str = "AdamW", **kwargs: Any):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **kwargs)
        if _is_number(weight_decay) and weight_decay < 0:
            raise ValueError(f"AdamW: weight_decay must be >= 0; got {weight_decay}.")
        self._set_hyper("weight_decay", weight_decay)

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        out["decay"] = _m.multiply(out["lr_t"], self._get_hyper("weight_decay", dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        var.assign_sub(_m.multiply(var, coefficients["decay"]))
        super()._resource_apply_dense(grad, var, coefficients)


class _Moments(Optimizer):
    """What Adamax and Nadam share: learning rate, ``beta_1``, ``beta_2`` and ``epsilon``,
    and the first and second moment slots ``m`` and ``v`` (all ``m`` slots first, as TF)."""

    def __init__(self, learning_rate: Any, beta_1: Any, beta_2: Any, epsilon: float,
                 name: str, **kwargs: Any):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)
        self.epsilon = float(epsilon)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self.add_slot(var, "m")
        for var in var_list:
            self.add_slot(var, "v")

    def _update_moments(self, grad: Tensor, var: Variable,
                        coefficients: dict[str, Tensor]) -> tuple[Variable, Variable]:
        """``m += (g - m) (1 - beta_1)``, ``v += (g^2 - v) (1 - beta_2)``; returns the slots."""
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign_add(_m.multiply(_m.subtract(grad, m), _m.subtract(1.0, coefficients["beta_1"])))
        v.assign_add(_m.multiply(_m.subtract(_m.square(grad), v),
                                 _m.subtract(1.0, coefficients["beta_2"])))
        return m, v

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon}


class Adamax(_Moments):
    """Adamax, Adam with the infinity norm (Keras's formulas): ``m += (g - m) * (1 -
    beta_1)``, ``u = max(beta_2 * u, |g|)``, ``var -= lr / (1 - beta_1^t) * m / (u +
    epsilon)``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.Adamax(0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)
    0.9
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: Any = 0.9, beta_2: Any = 0.999,
                 epsilon: float = 1e-7, name: str = "Adamax", **kwargs: Any):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        step = _m.cast(_m.add(self.iter.read_value(), 1), dtype)
        beta_1 = self._get_hyper("beta_1", dtype)
        out.update(beta_1=beta_1, beta_2=self._get_hyper("beta_2", dtype),
                   lr_corrected=_m.truediv(out["lr_t"], _m.subtract(1.0, _m.pow(beta_1, step))),
                   epsilon=convert_to_tensor(self.epsilon, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        m, u = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign_add(_m.multiply(_m.subtract(grad, m), _m.subtract(1.0, c["beta_1"])))
        u.assign(_m.maximum(_m.multiply(c["beta_2"], u), _m.abs(grad)))
        var.assign_sub(_m.truediv(_m.multiply(c["lr_corrected"], m),
                                  _m.add(u, c["epsilon"])))


class Nadam(_Moments):
    """Adam with Nesterov momentum (Keras's formulas, with its momentum schedule
    ``mu_t = beta_1 * (1 - 0.5 * 0.96^(0.004 t))`` and their running product kept in the
    non-slot variable ``momentum_product``):
    ``m_hat = mu_{t+1} m / (1 - prod_{t+1}) + (1 - mu_t) g / (1 - prod_t)``,
    ``var -= lr * m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon)``.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.Nadam(0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 3)  # 1 - 0.1 * (0.2 * mu_2 / (1 - mu_1 mu_2) + 2) / 2
    0.894
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: Any = 0.9, beta_2: Any = 0.999,
                 epsilon: float = 1e-7, name: str = "Nadam", **kwargs: Any):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)
        with self.name_scope:
            self.momentum_product = Variable(1.0, trainable=False, name="momentum_product",
                                             dtype=_dt.float32)

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        out = super()._prepare(dtype)
        step = _m.cast(_m.add(self.iter.read_value(), 1), dtype)
        beta_1, beta_2 = self._get_hyper("beta_1", dtype), self._get_hyper("beta_2", dtype)

        def mu(t: Tensor) -> Tensor:
            return _m.multiply(beta_1, _m.subtract(1.0, _m.multiply(0.5, _m.pow(0.96, _m.multiply(
                t, 0.004)))))

        u_t, u_next = mu(step), mu(_m.add(step, 1.0))
        product = _m.multiply(_m.cast(self.momentum_product.read_value(), dtype), u_t)
        out.update(u_t=u_t, u_next=u_next, product=product,
                   product_next=_m.multiply(product, u_next), beta_1=beta_1, beta_2=beta_2,
                   beta_2_power=_m.pow(beta_2, step),
                   epsilon=convert_to_tensor(self.epsilon, dtype))
        return out

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        c = coefficients
        m, v = self._update_moments(grad, var, c)
        m_hat = _m.add(
            _m.truediv(_m.multiply(c["u_next"], m), _m.subtract(1.0, c["product_next"])),
            _m.truediv(_m.multiply(_m.subtract(1.0, c["u_t"]), grad),
                       _m.subtract(1.0, c["product"])))
        v_hat = _m.truediv(v, _m.subtract(1.0, c["beta_2_power"]))
        var.assign_sub(_m.truediv(_m.multiply(c["lr_t"], m_hat),
                                  _m.add(_m.sqrt(v_hat), c["epsilon"])))

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None,
                        experimental_aggregate_gradients: bool = True) -> Variable:
        pairs = list(grads_and_vars)
        step = _m.cast(_m.add(self.iter.read_value(), 1), _dt.float32)
        u_t = _m.multiply(self._get_hyper("beta_1", _dt.float32), _m.subtract(
            1.0, _m.multiply(0.5, _m.pow(0.96, _m.multiply(step, 0.004)))))
        out = super().apply_gradients(pairs, name, experimental_aggregate_gradients)
        self.momentum_product.assign(_m.multiply(self.momentum_product, u_t))
        return out
