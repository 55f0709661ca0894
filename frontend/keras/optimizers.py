"""``keras.optimizers``: ``SGD`` (with momentum and Nesterov) and ``Adam``, with TensorFlow 2
Keras's update formulas, slot variables and checkpoint layout.

Checkpoint layout (the legacy TF 2 Keras ``OptimizerV2`` edges): the step counter is the
attribute ``iter`` (int64; also reachable as ``optimizer.iterations``); numeric
hyperparameters are float32 variables in attributes named after them (``learning_rate``,
``momentum``, ``beta_1``, ``beta_2``), so a traced training step reads their current value
and ``optimizer.learning_rate = 0.01`` assigns. Slot variables (``momentum``; ``m``, ``v``
and, with amsgrad, ``vhat``) are *not* attributes: they live in a private table that module
reflection and checkpoints do not walk, and reach checkpoints through
``_checkpoint_slots()`` (saved as ``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>``).
``optimizer.variables`` is ``(iter, *slots)`` (each once; hyperparameters excluded, as in
TensorFlow).
"""
from __future__ import annotations

import inspect
import logging
from typing import Any, Callable, Iterable

from stagecraft.ops import math_ops as _m
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import initializers
from stagecraft.state.module import Module
from stagecraft.eager.scopes import init_scope
from stagecraft.eager.tensor import Tensor
from stagecraft.state.variables import Variable

logger = logging.getLogger("stagecraft")


class _SlotTable:
    """Slot variables by (variable, slot name), in creation order. Not a dict or list on
    purpose: reflection and checkpoint traversal treat it as opaque, so slots are reached only
    through ``Optimizer._checkpoint_slots`` and never double counted."""

    __slots__ = ("by_key", "order")

    def __init__(self) -> None:
        self.by_key: dict[tuple[int, str], Variable] = {}
        self.order: list[tuple[Variable, str, Variable]] = []

    def get(self, var: Variable, name: str) -> Variable | None:
        return self.by_key.get((id(var), name))

    def add(self, var: Variable, name: str, slot: Variable) -> None:
        self.by_key[(id(var), name)] = slot
        self.order.append((var, name, slot))


class Optimizer(Module):
    """Base class of Keras optimizers (TF 2 ``OptimizerV2`` semantics).

    Subclasses declare their hyperparameters with ``_set_hyper``, create per-variable state
    with ``add_slot`` in ``_create_slots``, and update one variable in
    ``_resource_apply_dense(grad, var, coefficients)``. ``apply_gradients`` works eagerly and
    inside ``@tf.function`` (slots are created on the first trace, as TensorFlow requires).

    >>> import stagecraft as tf
    >>> opt = tf.keras.optimizers.SGD(learning_rate=0.5)
    >>> v = tf.Variable(1.0)
    >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); float(v), int(opt.iterations)
    (0.0, 1)
    """

    _TF_MODULE_IGNORED_PROPERTIES = Module._TF_MODULE_IGNORED_PROPERTIES | frozenset(
        ("_slots", "_hyper_names", "_slot_names"))

    def __init__(self, name: str, **kwargs: Any):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}. Gradient clipping and decay "
                            f"arguments are not supported; clip the gradients before "
                            f"apply_gradients.")
        super().__init__(name=name)
        object.__setattr__(self, "_hyper_names", [])
        self._slot_names: list[str] = []
        self._slots = _SlotTable()
        with self.name_scope:
            # Edge name "iter", as TF 2 Keras's OptimizerV2 tracks its step counter.
            self.iter = Variable(0, trainable=False, name="iter", dtype=_dt.int64)

    # -------------------------------------------------------------- hyperparameters
    def _set_hyper(self, name: str, value: Any) -> None:
        """Declares a hyperparameter: a number becomes a float32 variable attribute (read by
        traced steps at run time); a callable or tensor is kept as is."""
        if name not in self._hyper_names:
            self._hyper_names.append(name)
        current = vars(self).get(name)
        if _is_number(value) and isinstance(current, Variable):
            current.assign(float(value))
            return
        if _is_number(value):
            with self.name_scope:
                value = Variable(float(value), trainable=False, name=name, dtype=_dt.float32)
        super().__setattr__(name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        # `optimizer.learning_rate = 0.01` assigns the existing variable, as in TensorFlow,
        # so functions traced earlier see the new value.
        if name in vars(self).get("_hyper_names", ()):
            self._set_hyper(name, value)
        else:
            super().__setattr__(name, value)

    def _get_hyper(self, name: str, dtype: _dt.DType) -> Tensor:
        """The hyperparameter's current value as a tensor of ``dtype`` (callables are called
        with no arguments)."""
        value = getattr(self, name)
        if callable(value) and not isinstance(value, (Tensor, Variable)):
            value = value()
        return _m.cast(convert_to_tensor(value), dtype)

    def _decayed_lr(self, dtype: _dt.DType) -> Tensor:
        """The learning rate for this step: a number, a variable, a zero-argument callable, or
        a schedule called with the step count (a callable with one required argument)."""
        lr = self.learning_rate
        if callable(lr) and not isinstance(lr, (Tensor, Variable)):
            # A schedule gets the step count as a float of the variable's dtype, as in TF.
            value = lr(_m.cast(self.iter.read_value(), dtype)) if _wants_step(lr) else lr()
            return _m.cast(convert_to_tensor(value), dtype)
        return self._get_hyper("learning_rate", dtype)

    # ------------------------------------------------------------------------ slots
    @property
    def iterations(self) -> Variable:
        """The number of ``apply_gradients`` calls so far (an int64 variable)."""
        return self.iter

    def add_slot(self, var: Variable, slot_name: str, initializer: Any = "zeros") -> Variable:
        """The slot ``slot_name`` of ``var`` (same shape and dtype, non-trainable), created on
        first use. A checkpoint restored before it existed fills it in at creation
        (``stagecraft.state.checkpoint.slots.slot_created`` is called, eagerly, for each new slot).

        >>> import stagecraft as tf
        >>> v, opt = tf.Variable([1.0, 2.0]), tf.keras.optimizers.SGD()
        >>> slot = opt.add_slot(v, "accumulator", initializer="ones")
        >>> slot.numpy().tolist(), opt.add_slot(v, "accumulator") is slot
        ([1.0, 1.0], True)
        """
        slot = self._slots.get(var, slot_name)
        if slot is not None:
            return slot
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        init = initializers.get(initializer)
        with init_scope():
            value = convert_to_tensor(init(tuple(var.shape.as_list()), dtype=var.dtype),
                                      var.dtype)
        base = var.name[:-2] if var.name.endswith(":0") else var.name
        with self.name_scope:
            # Created in the trace (not lifted), so tf.function's creation rules apply.
            slot = Variable(value, trainable=False, name=f"{base}/{slot_name}",
                            dtype=var.dtype)
        self._slots.add(var, slot_name, slot)
        from stagecraft.state.checkpoint.slots import slot_created
        with init_scope():  # a pending checkpoint value is assigned eagerly, not in a trace
            slot_created(self, var, slot_name, slot)
        return slot

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        """The slot variable ``slot_name`` of ``var``.

        >>> import stagecraft as tf
        >>> v, opt = tf.Variable(1.0), tf.keras.optimizers.SGD(1.0, momentum=0.5)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)])
        >>> float(opt.get_slot(v, "momentum"))
        -2.0
        """
        slot = self._slots.get(var, slot_name)
        if slot is None:
            raise KeyError(f"{type(self).__name__} has no slot {slot_name!r} for variable "
                           f"{var.name}. Slots exist after the first apply_gradients that "
                           f"updates the variable; slot names: {self.get_slot_names()}.")
        return slot

    def get_slot_names(self) -> list[str]:
        """The names of the slots created so far (e.g. ``['m', 'v']``)."""
        return list(self._slot_names)

    def _checkpoint_slots(self) -> list[tuple[Variable, str, Variable]]:
        """Every (variable, slot name, slot variable), in creation order: what
        ``tf.train.Checkpoint`` saves under ``<variable>/.OPTIMIZER_SLOT/<optimizer>/<slot>``.

        >>> import stagecraft as tf
        >>> v, opt = tf.Variable(1.0), tf.keras.optimizers.Adam()
        >>> _ = opt.apply_gradients([(tf.constant(1.0), v)])
        >>> [name for _, name, _ in opt._checkpoint_slots()]
        ['m', 'v']
        """
        return list(self._slots.order)

    def _create_slots(self, var_list: list[Variable]) -> None:
        """Creates the slots ``var_list`` needs (none in the base class)."""

    def _prepare(self, dtype: _dt.DType) -> dict[str, Tensor]:
        """Per-dtype coefficients shared by every variable of that dtype in one step."""
        return {"lr_t": self._decayed_lr(dtype)}

    def _resource_apply_dense(self, grad: Tensor, var: Variable,
                              coefficients: dict[str, Tensor]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  f"_resource_apply_dense(grad, var, coefficients).")

    # -------------------------------------------------------------------- applying
    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Variable]],
                        name: str | None = None,
                        experimental_aggregate_gradients: bool = True) -> Variable:
        """Applies one update to each variable that has a gradient, then adds 1 to
        ``iterations``. Pairs whose gradient is None are skipped with a warning; if every
        gradient is None this is a ``ValueError``. Returns ``iterations``.

        >>> import stagecraft as tf
        >>> v = tf.Variable([1.0, 2.0])
        >>> opt = tf.keras.optimizers.Adam(learning_rate=0.1)
        >>> with tf.GradientTape() as tape:
        ...     loss = tf.reduce_sum(v * v)
        >>> _ = opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
        >>> [round(x, 4) for x in v.numpy().tolist()], opt.get_slot_names()
        ([0.9, 1.9], ['m', 'v'])
        """
        pairs = _filter_grads(grads_and_vars)
        self._create_slots([v for _, v in pairs])
        coefficients: dict[_dt.DType, dict[str, Tensor]] = {}
        for grad, var in pairs:
            if var.dtype not in coefficients:
                coefficients[var.dtype] = self._prepare(var.dtype)
            self._resource_apply_dense(grad, var, coefficients[var.dtype])
        self.iter.assign_add(1)
        return self.iter

    def minimize(self, loss: Any, var_list: Any, grad_loss: Any = None, name: str | None = None,
                 tape: Any = None) -> Variable:
        """Computes the gradients of ``loss`` and applies them: ``loss`` is a zero-argument
        callable (differentiated on a new tape), or a tensor computed under ``tape``.
        ``var_list`` may be a callable returning the variables.

        >>> import stagecraft as tf
        >>> v = tf.Variable(3.0)
        >>> _ = tf.keras.optimizers.SGD(0.25).minimize(lambda: v * v, [v]); float(v)
        1.5
        """
        from stagecraft.autodiff.tape import GradientTape
        if tape is None:
            if not callable(loss):
                raise ValueError("minimize: `tape` is required when a `Tensor` loss is passed. "
                                 "Pass tape=the GradientTape that computed it, or pass the "
                                 "loss as a zero-argument callable.")
            with GradientTape() as tape:
                if callable(var_list):
                    var_list = var_list()
                loss = loss()
        elif callable(loss):
            with tape:
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list, grad_loss)
        return self.apply_gradients(zip(grads, var_list))

    # ---------------------------------------------------------------- reflection
    @property
    def variables(self) -> tuple:  # type: ignore[override]
        """``(iterations, *slot variables)``, each once, in creation order."""
        return (self.iter,) + tuple(slot for _, _, slot in self._slots.order)

    @property
    def trainable_variables(self) -> tuple:  # type: ignore[override]
        """Always empty: an optimizer's state is never trained."""
        return ()

    @property
    def non_trainable_variables(self) -> tuple:  # type: ignore[override]
        """The same as ``variables``."""
        return self.variables

    def get_config(self) -> dict:
        """The hyperparameters' current values (numbers) or callables."""
        out: dict[str, Any] = {"name": self.name}
        for h in self._hyper_names:
            value = getattr(self, h)
            out[h] = float(value.numpy()) if isinstance(value, Variable) else value
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} iterations={int(self.iter.numpy())}>"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _wants_step(fn: Callable) -> bool:
    """True for a learning-rate schedule (called with the step), False for a zero-argument
    callable."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params)


def _filter_grads(grads_and_vars: Iterable[tuple[Any, Variable]]) -> list[tuple[Tensor, Variable]]:
    """Checks the pairs, converts the gradients and drops the None ones (TensorFlow's rules)."""
    pairs = list(grads_and_vars)
    out: list[tuple[Tensor, Variable]] = []
    missing: list[str] = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"apply_gradients: expected (gradient, variable) pairs, got "
                            f"{pair!r} at position {i}. Pass zip(grads, variables).")
        grad, var = pair
        if not isinstance(var, Variable):
            raise TypeError(f"apply_gradients: the second element of pair {i} must be a "
                            f"tf.Variable, got {type(var).__name__}. Optimizers update "
                            f"variables in place; pass zip(grads, model.trainable_variables).")
        if grad is None:
            missing.append(var.name)
            continue
        grad = convert_to_tensor(grad) if not isinstance(grad, Tensor) else grad
        if grad.dtype != var.dtype:
            raise TypeError(f"apply_gradients: the gradient of variable {var.name} has dtype "
                            f"{grad.dtype.name} but the variable is {var.dtype.name}. Cast the "
                            f"gradient (tf.cast(g, tf.{var.dtype.name})).")
        out.append((grad, var))
    if not out:
        names = [v.name for _, v in pairs] if pairs else []
        raise ValueError(f"No gradients provided for any variable: {names}. Check that the "
                         f"loss is computed from the variables inside the GradientTape block "
                         f"and that nothing in between leaves the tape (NumPy, Python floats, "
                         f"tf.stop_gradient).")
    if missing:
        logger.warning("Gradients do not exist for variables %s when minimizing the loss.",
                       missing)
    return out


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
        from stagecraft.keras.initializers import Constant
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


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """The optimizer for ``identifier``: a name (``"adam"``, case-insensitive) gives a new one
    with default settings; an optimizer is returned as is.

    >>> import stagecraft as tf
    >>> type(tf.keras.optimizers.get("RMSprop")).__name__
    'RMSprop'
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))}.")
        return cls()
    raise TypeError(f"Could not interpret optimizer identifier: {identifier!r} (of type "
                    f"{type(identifier).__name__}).")


__all__ = ["Adagrad", "Adam", "Optimizer", "RMSprop", "SGD", "get"]
