"""``keras.regularizers``: weight penalties (``L1``, ``L2``, ``L1L2``,
``OrthogonalRegularizer``) that layers add to their ``losses`` for ``kernel_regularizer=``
and similar arguments, with Keras's formulas, defaults, names and configs."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["L1", "L1L2", "L2", "OrthogonalRegularizer", "Regularizer", "deserialize", "get",
           "l1", "l1_l2", "l2", "orthogonal_regularizer", "serialize", "serialize_or_none"]


class Regularizer:
    """Base class: ``regularizer(weight)`` is a scalar penalty added to the loss.

    >>> import stagecraft as tf
    >>> class Sum(tf.keras.regularizers.Regularizer):
    ...     def __call__(self, x):
    ...         return tf.reduce_sum(x)
    >>> float(Sum()(tf.ones([3])))
    3.0
    """

    def __call__(self, x: Any) -> Tensor:
        return convert_to_tensor(0.0)

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Regularizer":
        """A new regularizer from ``get_config``'s output."""
        return cls(**config)


def _factor(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name} must be a non-negative number; got {value!r}.")
    return float(value)


class L1L2(Regularizer):
    """``l1 * sum(abs(x)) + l2 * sum(square(x))``.

    >>> import stagecraft as tf
    >>> float(tf.keras.regularizers.L1L2(l1=0.5, l2=0.25)(tf.constant([1., -2.])))
    2.75
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1, self.l2 = _factor("L1L2: l1", l1), _factor("L1L2: l2", l2)

    def __call__(self, x: Any) -> Tensor:
        x = x if isinstance(x, Tensor) else convert_to_tensor(x)
        penalty = _m.multiply(_m.reduce_sum(x), 0.0)
        if self.l1:
            penalty = _m.add(penalty, _m.multiply(self.l1, _m.reduce_sum(_m.abs(x))))
        if self.l2:
            penalty = _m.add(penalty, _m.multiply(self.l2, _m.reduce_sum(_m.square(x))))
        return penalty

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(abs(x))`` (default ``l1=0.01``).

    >>> import stagecraft as tf
    >>> float(tf.keras.regularizers.L1(0.5)(tf.constant([1., -2.])))
    1.5
    """

    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(square(x))`` (default ``l2=0.01``).

    >>> import stagecraft as tf
    >>> float(tf.keras.regularizers.L2(0.5)(tf.constant([1., -2.])))
    2.5
    """

    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (``mode='rows'``) or columns of a 2D kernel toward orthogonality:
    ``factor * 0.5 * sum(|offdiag(N N^T)|) / (n (n - 1) / 2)`` with ``N`` the L2-normalized
    rows (or columns).

    >>> import stagecraft as tf
    >>> float(tf.keras.regularizers.OrthogonalRegularizer(1.0)(tf.eye(3)))
    0.0
    """

    def __init__(self, factor: float = 0.01, mode: str = "rows"):
        if mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer: mode must be 'rows' or 'columns'; got "
                             f"{mode!r}.")
        self.factor, self.mode = _factor("OrthogonalRegularizer: factor", factor), mode

    def __call__(self, x: Any) -> Tensor:
        x = x if isinstance(x, Tensor) else convert_to_tensor(x)
        if x.shape.rank != 2:
            raise ValueError(f"OrthogonalRegularizer expects a 2D weight; got shape {x.shape}.")
        if self.mode == "rows":
            unit = _nn.l2_normalize(x, axis=1)
            product, size = _m.matmul(unit, unit, transpose_b=True), x.shape[0]
        else:
            unit = _nn.l2_normalize(x, axis=0)
            product, size = _m.matmul(unit, unit, transpose_a=True), x.shape[1]
        off = _m.multiply(product, _m.subtract(1.0, _a.eye(size, dtype=x.dtype)))
        pairs = size * (size - 1.0) / 2.0
        return _m.truediv(_m.multiply(self.factor * 0.5, _m.reduce_sum(_m.abs(off))), pairs)

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    """``L1L2(l1, l2)`` with Keras's function defaults (both 0.01).

    >>> import stagecraft as tf
    >>> tf.keras.regularizers.l1_l2().get_config()
    {'l1': 0.01, 'l2': 0.01}
    """
    return L1L2(l1=l1, l2=l2)


l1, l2, orthogonal_regularizer = L1, L2, OrthogonalRegularizer

_BY_NAME: dict[str, Callable[..., Regularizer]] = {
    "L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": l1_l2,
    "OrthogonalRegularizer": OrthogonalRegularizer, "orthogonal_regularizer":
        OrthogonalRegularizer}


def serialize_or_none(regularizer: Any) -> dict | None:
    """``serialize`` for configs: None stays None.

    >>> serialize_or_none(None) is None
    True
    """
    return None if regularizer is None else serialize(regularizer)


def serialize(regularizer: Regularizer) -> dict:
    """``{'class_name': ..., 'config': ...}``.

    >>> import stagecraft as tf
    >>> tf.keras.regularizers.serialize(tf.keras.regularizers.L2(0.1))
    {'class_name': 'L2', 'config': {'l2': 0.1}}
    """
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def deserialize(config: dict | str, custom_objects: dict | None = None) -> Regularizer:
    """A regularizer from ``serialize``'s output or a name (``'l2'``).

    >>> import stagecraft as tf
    >>> tf.keras.regularizers.deserialize({"class_name": "L1", "config": {"l1": 0.2}}).l1
    0.2
    """
    return serialization.deserialize_named("regularizer", config, _BY_NAME, custom_objects)


def get(identifier: Any) -> Callable[[Any], Tensor] | None:
    """None, a regularizer (or any callable), a name, or a ``serialize`` dict.

    >>> import stagecraft as tf
    >>> type(tf.keras.regularizers.get("l2")).__name__
    'L2'
    """
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}.")
