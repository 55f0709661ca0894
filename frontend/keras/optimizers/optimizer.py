"""The optimizer base class: hyperparameters, slots, ``apply_gradients``/``minimize``, and
the checkpoint layout every optimizer shares.

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

import functools
import inspect
import logging
from typing import Any, Callable, Iterable

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.scopes import init_scope
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import constraints, initializers
from stagecraft.ops import math_ops as _m
from stagecraft.ops.clip_ops import clip_by_norm
from stagecraft.state.module import Module
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
        ("_slots", "_hyper_names", "_slot_names", "_clipping"))

    def __init__(self, name: str, clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None, **kwargs: Any):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}.")
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError(f"{type(self).__name__}: pass at most one of clipnorm and "
                             f"global_clipnorm.")
        for what, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                            ("global_clipnorm", global_clipnorm)):
            if value is not None and (not _is_number(value) or value <= 0):
                raise ValueError(f"{type(self).__name__}: {what} must be a positive number; "
                                 f"got {value!r}.")
        super().__init__(name=name)
        object.__setattr__(self, "_clipping", (clipnorm, clipvalue, global_clipnorm))
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

    def add_slot(self, var: Variable, slot_name: str, initializer: Any = "zeros",
                 shape: Any = None) -> Variable:
        """The slot ``slot_name`` of ``var`` (same dtype, non-trainable; ``var``'s shape unless
        ``shape`` is given, as Adafactor's factored moments need), created on first use. A
        checkpoint restored before it existed fills it in at creation
        (``stagecraft.state.checkpoint.slots.slot_created`` is called, eagerly, for each new
        slot).

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
            dims = tuple(var.shape.as_list()) if shape is None else tuple(shape)
            value = convert_to_tensor(init(dims, dtype=var.dtype), var.dtype)
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
        pairs = self._clip(_filter_grads(grads_and_vars))
        self._create_slots([v for _, v in pairs])
        coefficients: dict[_dt.DType, dict[str, Tensor]] = {}
        for grad, var in pairs:
            if var.dtype not in coefficients:
                coefficients[var.dtype] = self._prepare(var.dtype)
            self._resource_apply_dense(grad, var, coefficients[var.dtype])
            constraint = constraints.of(var)
            if constraint is not None:  # a layer's kernel_constraint=..., after the update
                var.assign(constraint(var))
        self.iter.assign_add(1)
        return self.iter

    def _clip(self, pairs: list[tuple[Tensor, Variable]]) -> list[tuple[Tensor, Variable]]:
        """Keras's gradient clipping, in its order: each gradient to norm ``clipnorm``, or all
        of them to global norm ``global_clipnorm``; then each element to ``clipvalue``."""
        clipnorm, clipvalue, global_clipnorm = self._clipping
        if clipnorm is not None:
            pairs = [(clip_by_norm(g, clipnorm), v) for g, v in pairs]
        if global_clipnorm is not None and pairs:
            total = _m.sqrt(functools.reduce(_m.add, [
                _m.reduce_sum(_m.square(_m.cast(g, _dt.float32))) for g, _ in pairs]))
            scale = _m.truediv(global_clipnorm, _m.maximum(total, global_clipnorm))
            pairs = [(_m.multiply(g, _m.cast(scale, g.dtype)), v) for g, v in pairs]
        if clipvalue is not None:
            pairs = [(_m.clip_by_value(g, -clipvalue, clipvalue), v) for g, v in pairs]
        return pairs

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
        for key, value in zip(("clipnorm", "clipvalue", "global_clipnorm"), self._clipping):
            if value is not None:
                out[key] = value
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
