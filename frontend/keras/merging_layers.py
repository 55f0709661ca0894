"""Layers that merge several inputs into one (``Add``, ``Subtract``, ``Multiply``,
``Average``, ``Maximum``, ``Minimum``, ``Concatenate``) and ``Lambda``, which wraps a function
as a layer: the Functional API's way to combine and transform tensors."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "Lambda"]


class _Merge(Layer):
    """A merge of a list of same-shaped inputs, elementwise, by ``_combine``."""

    _combine: Callable[[Any, Any], Tensor]
    _arity: int | None = None

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"A `{type(self).__name__}` layer should be called on a list of "
                             f"at least 2 inputs; received {type(inputs).__name__}.")
        if self._arity is not None and len(inputs) != self._arity:
            raise ValueError(f"A `{type(self).__name__}` layer should be called on exactly "
                             f"{self._arity} inputs; received {len(inputs)}.")
        return functools.reduce(type(self)._combine, inputs)


@serialization.register
class Add(_Merge):
    """The elementwise sum of its inputs.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Add()([tf.ones([1, 2]), tf.ones([1, 2])]).numpy().tolist()
    [[2.0, 2.0]]
    """
    _combine = staticmethod(_m.add)


@serialization.register
class Subtract(_Merge):
    """The difference of its two inputs."""
    _combine = staticmethod(_m.subtract)
    _arity = 2


@serialization.register
class Multiply(_Merge):
    """The elementwise product of its inputs."""
    _combine = staticmethod(_m.multiply)


@serialization.register
class Maximum(_Merge):
    """The elementwise maximum of its inputs."""
    _combine = staticmethod(_m.maximum)


@serialization.register
class Minimum(_Merge):
    """The elementwise minimum of its inputs."""
    _combine = staticmethod(_m.minimum)


@serialization.register
class Average(_Merge):
    """The elementwise mean of its inputs.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Average()([tf.zeros([1]), tf.ones([1])]).numpy().tolist()
    [0.5]
    """

    _combine = staticmethod(_m.add)

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        return _m.truediv(super().call(inputs), float(len(inputs)))


@serialization.register
class Concatenate(Layer):
    """Concatenates its list of inputs along ``axis`` (default the last).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Concatenate()([tf.ones([2, 1]), tf.zeros([2, 2])]).shape
    TensorShape([2, 3])
    """

    def __init__(self, axis: int = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError("A `Concatenate` layer should be called on a list of inputs.")
        return _a.concat(list(inputs), axis=self.axis)


@serialization.register
class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (no weights).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Lambda(lambda x: x * 2.0)(tf.ones([1, 2])).numpy().tolist()
    [[2.0, 2.0]]
    """

    def __init__(self, function: Callable[..., Any], output_shape: Any = None,
                 mask: Any = None, arguments: dict | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable; got "
                            f"{type(function).__name__}.")
        self.function = function
        self.arguments = dict(arguments or {})

    def get_config(self) -> dict:
        raise ValueError(f"Layer {self.name!r} (Lambda) wraps a Python function, which a saved "
                         f"model cannot hold without storing code (a .keras file stores none). "
                         f"Write it as a Layer subclass and pass it to load_model as "
                         f"custom_objects, or save the weights only (save_weights).")

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)
