"""``LossScaleOptimizer`` (Keras 3's, as ``tf.keras.optimizers``/``mixed_precision`` has it):
dynamic loss scaling for float16 training. The loss is multiplied by ``dynamic_scale`` before
differentiation (``scale_loss``) so small gradients survive float16; ``apply_gradients``
divides the gradients back, applies them with the inner optimizer only when all are finite,
and adapts the scale: halved (and the step skipped) on an overflow, doubled after
``dynamic_growth_steps`` finite steps in a row."""
from __future__ import annotations

import functools
from typing import Any, Iterable

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.optimizers.optimizer import Optimizer, _filter_grads
from stagecraft.keras.optimizers.registry import deserialize, serialize
from stagecraft.ops import math_ops as _m
from stagecraft.staging.cond import cond
from stagecraft.state.variables import Variable

__all__ = ["LossScaleOptimizer"]


class LossScaleOptimizer(Optimizer):
    """Wraps ``inner_optimizer`` with dynamic loss scaling (Keras 3's rules).

    >>> import stagecraft as tf
    >>> opt = tf.keras.optimizers.LossScaleOptimizer(tf.keras.optimizers.SGD(1.0),
    ...                                              initial_scale=8.0)
    >>> v = tf.Variable(1.0)
    >>> with tf.GradientTape() as tape:
    ...     loss = opt.scale_loss(v * 0.5)
    >>> _ = opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
    >>> float(v), float(opt.dynamic_scale)
    (0.5, 8.0)
    >>> _ = opt.apply_gradients([(tf.constant(float("inf")), v)])  # overflow: skipped
    >>> float(v), float(opt.dynamic_scale)
    (0.5, 4.0)
    """

    def __init__(self, inner_optimizer: Any, initial_scale: float = 2.0 ** 15,
                 dynamic_growth_steps: int = 2000, name: str | None = None, **kwargs: Any):
        if isinstance(inner_optimizer, dict):  # from a config
            inner_optimizer = deserialize(inner_optimizer)
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"LossScaleOptimizer: inner_optimizer must be a Keras optimizer; "
                            f"got {type(inner_optimizer).__name__}.")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise ValueError("LossScaleOptimizer: the inner optimizer is already a "
                             "LossScaleOptimizer; wrap the plain optimizer once.")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(dynamic_growth_steps, int) \
                or dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be a positive "
                             f"integer; got {dynamic_growth_steps!r}.")
        if not float(initial_scale) > 0:
            raise ValueError(f"LossScaleOptimizer: initial_scale must be positive; got "
                             f"{initial_scale!r}.")
        super().__init__(name or "loss_scale_optimizer", **kwargs)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = dynamic_growth_steps
        with self.name_scope:
            self.dynamic_scale = Variable(self.initial_scale, trainable=False,
                                          name="dynamic_scale", dtype=_dt.float32)
            self.step_counter = Variable(0, trainable=False, name="step_counter",
                                         dtype=_dt.int64)

    @property
    def iterations(self) -> Variable:
        """The inner optimizer's step count (skipped steps do not count)."""
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self) -> Any:
        """The inner optimizer's learning rate."""
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self.inner_optimizer.learning_rate = value

    def scale_loss(self, loss: Any) -> Tensor:
        """``loss * dynamic_scale`` (differentiate this; ``apply_gradients`` unscales)."""
        loss = loss if isinstance(loss, Tensor) else convert_to_tensor(loss)
        return _m.multiply(loss, _m.cast(self.dynamic_scale.read_value(), loss.dtype))

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Variable]],
                        name: str | None = None,
                        experimental_aggregate_gradients: bool = True) -> Variable:
        """Unscales the gradients and applies them when all are finite; adapts the scale."""
        pairs = _filter_grads(grads_and_vars)
        self.inner_optimizer._create_slots([v for _, v in pairs])  # not inside the cond
        finite = functools.reduce(_m.logical_and,
                                  [_m.reduce_all(_m.is_finite(g)) for g, _ in pairs])

        def apply() -> Tensor:
            scale = self.dynamic_scale.read_value()
            self.inner_optimizer.apply_gradients(
                [(_m.truediv(g, _m.cast(scale, g.dtype)), v) for g, v in pairs])
            grow = _m.equal(self.step_counter.read_value(), self.dynamic_growth_steps - 1)

            def upscale() -> Tensor:
                self.step_counter.assign(0)
                self.dynamic_scale.assign(_m.multiply(scale, 2.0))
                return convert_to_tensor(True)

            def count() -> Tensor:
                self.step_counter.assign_add(1)
                return convert_to_tensor(False)
            return cond(grow, upscale, count)

        def skip() -> Tensor:
            self.step_counter.assign(0)
            self.dynamic_scale.assign(_m.multiply(self.dynamic_scale.read_value(), 0.5))
            return convert_to_tensor(False)
        cond(finite, apply, skip)
        return self.iterations

    def get_config(self) -> dict:
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}
