"""``keras.optimizers.schedules``: learning rates as functions of the step (``iterations``),
passed as ``learning_rate=`` to any optimizer. They compute with tensor ops, so a staged
training step evaluates them at run time, step by step."""
from __future__ import annotations

import abc
import math
from typing import Any, Sequence

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import math_ops as _m

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "PolynomialDecay", "InverseTimeDecay", "CosineDecay"]


def _step(step: Any) -> Tensor:
    return _m.cast(convert_to_tensor(step), _dt.float32)


class LearningRateSchedule(abc.ABC):
    """Base class: ``schedule(step)`` is the learning rate at ``step`` (a float tensor);
    subclasses define ``__call__`` (a subclass without it cannot be created)."""

    @abc.abstractmethod
    def __call__(self, step: Any) -> Tensor:
        """The learning rate at ``step``."""

    def get_config(self) -> dict:
        return {}


class _Decay(LearningRateSchedule):
    """What exponential and inverse-time decay share: their arguments and the (optionally
    floored) progress ``step / decay_steps``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str | None = None):
        if decay_steps <= 0:
            raise ValueError(f"{type(self).__name__}: decay_steps must be positive; got "
                             f"{decay_steps}.")
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def _progress(self, step: Any) -> Tensor:
        p = _m.truediv(_step(step), float(self.decay_steps))
        return _m.floor(p) if self.staircase else p

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_Decay):
    """``initial_learning_rate * decay_rate ^ (step / decay_steps)`` (the exponent floored
    with ``staircase``).

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.ExponentialDecay(1.0, 10, 0.5)
    >>> float(s(20)), float(s(5))
    (0.25, 0.7071067690849304)
    """

    def __call__(self, step: Any) -> Tensor:
        return _m.multiply(float(self.initial_learning_rate),
                           _m.pow(float(self.decay_rate), self._progress(step)))


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[i]`` for ``boundaries[i-1] < step <= boundaries[i]`` (``values`` has one more
    entry than ``boundaries``).

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    >>> [float(s(n)) for n in (0, 10, 11, 25)]
    [1.0, 1.0, 0.5, 0.10000000149011612]
    """

    def __init__(self, boundaries: Sequence[float], values: Sequence[float],
                 name: str | None = None):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: values must have one more entry than "
                             f"boundaries; got {len(values)} values, {len(boundaries)} "
                             f"boundaries.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step: Any) -> Tensor:
        step = _step(step)
        rate = convert_to_tensor(float(self.values[-1]))
        for boundary, value in reversed(list(zip(self.boundaries, self.values))):
            rate = _m.where(_m.less_equal(step, float(boundary)), float(value), rate)
        return rate

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ^ power`` (then constant; ``cycle`` restarts with longer
    periods).

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.PolynomialDecay(1.0, 10, 0.0)
    >>> [round(float(s(n)), 4) for n in (0, 5, 10, 20)]
    [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str | None = None):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle = end_learning_rate, power, cycle
        self.name = name

    def __call__(self, step: Any) -> Tensor:
        step = _step(step)
        steps = convert_to_tensor(float(self.decay_steps))
        if self.cycle:
            multiplier = _m.where(_m.equal(step, 0.0), 1.0, _m.ceil(_m.truediv(step, steps)))
            steps = _m.multiply(steps, multiplier)
        else:
            step = _m.minimum(step, steps)
        fraction = _m.pow(_m.subtract(1.0, _m.truediv(step, steps)), float(self.power))
        return _m.add(_m.multiply(float(self.initial_learning_rate - self.end_learning_rate),
                                  fraction), float(self.end_learning_rate))

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(_Decay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored with
    ``staircase``).

    >>> import stagecraft as tf
    >>> float(tf.keras.optimizers.schedules.InverseTimeDecay(1.0, 10, 1.0)(10))
    0.5
    """

    def __call__(self, step: Any) -> Tensor:
        return _m.truediv(float(self.initial_learning_rate),
                          _m.add(1.0, _m.multiply(float(self.decay_rate), self._progress(step))))


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` to ``alpha * initial_learning_rate`` over
    ``decay_steps``: ``lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)``. With ``warmup_target``, the rate first rises linearly from
    ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``, then decays from
    ``warmup_target`` (Keras's warmup).

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.CosineDecay(1.0, 10)
    >>> [round(float(s(n)), 4) for n in (0, 5, 10)]
    [1.0, 0.5, 0.0]
    >>> w = tf.keras.optimizers.schedules.CosineDecay(0.0, 10, warmup_target=1.0, warmup_steps=4)
    >>> [round(float(w(n)), 4) for n in (0, 2, 4, 9, 14)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: float, alpha: float = 0.0,
                 name: str | None = None, warmup_target: float | None = None,
                 warmup_steps: float = 0):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.alpha, self.name = alpha, name
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _decay(self, step: Tensor, start: float) -> Tensor:
        fraction = _m.truediv(step, float(self.decay_steps))
        cosine = _m.multiply(0.5, _m.add(1.0, _m.cos(_m.multiply(math.pi, fraction))))
        decayed = _m.add(_m.multiply(1.0 - self.alpha, cosine), float(self.alpha))
        return _m.multiply(float(start), decayed)

    def __call__(self, step: Any) -> Tensor:
        if self.warmup_target is None:
            return self._decay(_m.minimum(_step(step), float(self.decay_steps)),
                               self.initial_learning_rate)
        warmup = float(self.warmup_steps)
        step = _m.minimum(_step(step), float(self.decay_steps) + warmup)
        rising = _m.add(_m.multiply(float(self.warmup_target) - self.initial_learning_rate,
                                    _m.truediv(step, max(warmup, 1.0))),
                        float(self.initial_learning_rate))
        falling = self._decay(_m.subtract(step, warmup), self.warmup_target)
        return _m.where(_m.less(step, warmup), rising, falling)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov and Hutter): the first period lasts
    ``first_decay_steps``, each next one ``t_mul`` times longer and starting ``m_mul`` times
    lower; within a period, ``lr * ((1 - alpha) * 0.5 * m_mul^i * (1 + cos(pi * f)) +
    alpha)`` with ``f`` the fraction of the period done.

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.CosineDecayRestarts(1.0, 10, m_mul=0.5)
    >>> [round(float(s(n)), 4) for n in (0, 5, 10, 20)]
    [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, initial_learning_rate: float, first_decay_steps: float,
                 t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                 name: str | None = None):
        if first_decay_steps <= 0:
            raise ValueError(f"CosineDecayRestarts: first_decay_steps must be positive; got "
                             f"{first_decay_steps}.")
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, \
            first_decay_steps
        self.t_mul, self.m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step: Any) -> Tensor:
        done = _m.truediv(_step(step), float(self.first_decay_steps))
        t_mul = float(self.t_mul)
        if t_mul == 1.0:
            restart = _m.floor(done)
            done = _m.subtract(done, restart)
        else:  # periods grow geometrically: find the period, then the fraction of it
            restart = _m.floor(_m.truediv(_m.log(_m.subtract(1.0, _m.multiply(
                done, 1.0 - t_mul))), math.log(t_mul)))
            length = _m.pow(t_mul, restart)
            before = _m.truediv(_m.subtract(1.0, length), 1.0 - t_mul)
            done = _m.truediv(_m.subtract(done, before), length)
        cosine = _m.multiply(_m.multiply(0.5, _m.pow(float(self.m_mul), restart)),
                             _m.add(1.0, _m.cos(_m.multiply(math.pi, done))))
        decayed = _m.add(_m.multiply(1.0 - self.alpha, cosine), float(self.alpha))
        return _m.multiply(float(self.initial_learning_rate), decayed)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


def serialize(schedule: LearningRateSchedule) -> dict:
    """``{'class_name': ..., 'config': schedule.get_config()}``.

    >>> import stagecraft as tf
    >>> tf.keras.optimizers.schedules.serialize(
    ...     tf.keras.optimizers.schedules.CosineDecay(0.1, 100))["class_name"]
    'CosineDecay'
    """
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> LearningRateSchedule:
    """A new schedule from ``serialize``'s output (built-in classes or ``custom_objects``).

    >>> import stagecraft as tf
    >>> s = tf.keras.optimizers.schedules.deserialize(
    ...     {"class_name": "ExponentialDecay", "config": {"initial_learning_rate": 1.0,
    ...      "decay_steps": 1, "decay_rate": 0.5}})
    >>> float(s(2))
    0.25
    """
    known = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                           PolynomialDecay, InverseTimeDecay, CosineDecay,
                                           CosineDecayRestarts)}
    known.update(custom_objects or {})
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in known:
        raise ValueError(f"Unknown learning rate schedule {name!r}: known ones are "
                         f"{', '.join(sorted(known))}; pass custom schedules as "
                         f"custom_objects={{'Name': Name}}.")
    return known[name](**config.get("config", {}))


__all__ += ["CosineDecayRestarts", "deserialize", "serialize"]
