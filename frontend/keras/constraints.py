"""``keras.constraints``: projections applied to a weight after each optimizer update
(``kernel_constraint=``): ``MaxNorm``, ``MinMaxNorm``, ``NonNeg``, ``UnitNorm``, with
Keras's formulas (norms over ``axis``, ``epsilon = 1e-7``). A layer's ``add_weight``
records the constraint here; optimizers apply it after updating the variable."""
from __future__ import annotations

import weakref
from typing import Any, Callable

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.ops import math_ops as _m

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize", "get",
           "max_norm", "min_max_norm", "non_neg", "serialize", "serialize_or_none", "unit_norm"]

_EPSILON = 1e-7


class Constraint:
    """Base class: ``constraint(w)`` returns the projected weight.

    >>> import stagecraft as tf
    >>> tf.keras.constraints.Constraint()(tf.constant([1.])).numpy().tolist()
    [1.0]
    """

    def __call__(self, w: Any) -> Tensor:
        return w if isinstance(w, Tensor) else convert_to_tensor(w)

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Constraint":
        """A new constraint from ``get_config``'s output."""
        return cls(**config)


def _norms(w: Tensor, axis: Any) -> Tensor:
    return _m.sqrt(_m.reduce_sum(_m.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescales slices along ``axis`` whose L2 norm exceeds ``max_value``.

    >>> import stagecraft as tf
    >>> out = tf.keras.constraints.MaxNorm(1.0)(tf.constant([[3.], [4.]]))
    >>> [round(v, 4) for v in out.numpy().ravel().tolist()]
    [0.6, 0.8]
    """

    def __init__(self, max_value: float = 2.0, axis: Any = 0):
        self.max_value, self.axis = float(max_value), axis

    def __call__(self, w: Any) -> Tensor:
        w = super().__call__(w)
        norms = _norms(w, self.axis)
        desired = _m.clip_by_value(norms, 0.0, self.max_value)
        return _m.multiply(w, _m.truediv(desired, _m.add(norms, _EPSILON)))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves the L2 norm of slices along ``axis`` into ``[min_value, max_value]``, by
    ``rate`` of the way (1: all of it).

    >>> import stagecraft as tf
    >>> c = tf.keras.constraints.MinMaxNorm(2.0, 3.0)
    >>> [round(v, 4) for v in c(tf.constant([[0.6], [0.8]])).numpy().ravel().tolist()]
    [1.2, 1.6]
    """

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: Any = 0):
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), axis

    def __call__(self, w: Any) -> Tensor:
        w = super().__call__(w)
        norms = _norms(w, self.axis)
        desired = _m.add(_m.multiply(self.rate, _m.clip_by_value(norms, self.min_value,
                                                                 self.max_value)),
                         _m.multiply(1.0 - self.rate, norms))
        return _m.multiply(w, _m.truediv(desired, _m.add(norms, _EPSILON)))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative weights to 0 (as Keras, by multiplying with ``w >= 0``, so -1 becomes
    -0.0).

    >>> import stagecraft as tf
    >>> tf.keras.constraints.NonNeg()(tf.constant([-1., 2.])).numpy().tolist()
    [-0.0, 2.0]
    """

    def __call__(self, w: Any) -> Tensor:
        w = super().__call__(w)
        return _m.multiply(w, _m.cast(_m.greater_equal(w, 0.0), w.dtype))


class UnitNorm(Constraint):
    """Scales slices along ``axis`` to unit L2 norm.

    >>> import stagecraft as tf
    >>> out = tf.keras.constraints.UnitNorm()(tf.constant([[3.], [4.]]))
    >>> [round(v, 4) for v in out.numpy().ravel().tolist()]
    [0.6, 0.8]
    """

    def __init__(self, axis: Any = 0):
        self.axis = axis

    def __call__(self, w: Any) -> Tensor:
        w = super().__call__(w)
        return _m.truediv(w, _m.add(_norms(w, self.axis), _EPSILON))

    def get_config(self) -> dict:
        return {"axis": self.axis}


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm

_BY_NAME: dict[str, type] = {
    "MaxNorm": MaxNorm, "MinMaxNorm": MinMaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
    "max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm}


def serialize_or_none(constraint: Any) -> dict | None:
    """``serialize`` for configs: None stays None.

    >>> serialize_or_none(None) is None
    True
    """
    return None if constraint is None else serialize(constraint)


def serialize(constraint: Constraint) -> dict:
    """``{'class_name': ..., 'config': ...}``.

    >>> import stagecraft as tf
    >>> tf.keras.constraints.serialize(tf.keras.constraints.NonNeg())
    {'class_name': 'NonNeg', 'config': {}}
    """
    return {"class_name": type(constraint).__name__, "config": constraint.get_config()}


def deserialize(config: dict | str, custom_objects: dict | None = None) -> Constraint:
    """A constraint from ``serialize``'s output or a name (``'non_neg'``).

    >>> import stagecraft as tf
    >>> type(tf.keras.constraints.deserialize("unit_norm")).__name__
    'UnitNorm'
    """
    return serialization.deserialize_named("constraint", config, _BY_NAME, custom_objects)


def get(identifier: Any) -> Callable[[Any], Tensor] | None:
    """None, a constraint (or any callable), a name, or a ``serialize`` dict.

    >>> import stagecraft as tf
    >>> type(tf.keras.constraints.get("max_norm")).__name__
    'MaxNorm'
    """
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}.")


# The constraint of each variable made by a layer, found by the optimizers after an update
# (variables have fixed slots, so the link is kept here, by identity, without keeping the
# variable alive).
_OF_VARIABLE: dict[int, tuple[weakref.ref, Callable[[Any], Tensor]]] = {}


def attach(variable: Any, constraint: Callable[[Any], Tensor]) -> None:
    """Records ``constraint`` as ``variable``'s (applied after each optimizer update)."""
    key = id(variable)
    _OF_VARIABLE[key] = (weakref.ref(variable, lambda _: _OF_VARIABLE.pop(key, None)),
                         constraint)


def of(variable: Any) -> Callable[[Any], Tensor] | None:
    """The constraint ``attach`` recorded for ``variable``, or None."""
    entry = _OF_VARIABLE.get(id(variable))
    if entry is None or entry[0]() is not variable:
        return None
    return entry[1]
