"""Layers that merge several inputs into one (``Add``, ``Subtract``, ``Multiply``,
``Average``, ``Maximum``, ``Minimum``, ``Concatenate``, ``Dot``, and their functional forms
``add``, ``subtract``, ...) and ``Lambda``, which wraps a function
as a layer: the Functional API's way to combine and transform tensors."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops.einsum_ops import einsum

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


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _batch_dot(x: Tensor, y: Tensor, axes: tuple[int, int]) -> Tensor:
    """Keras's ``batch_dot``: per example, contracts axis ``axes[0]`` of ``x`` with axis
    ``axes[1]`` of ``y``; the other axes follow in order (``x``'s, then ``y``'s)."""
    rx, ry = x.shape.rank, y.shape.rank
    xs = list(_LETTERS[:rx])
    ys = [xs[0]] + list(_LETTERS[rx:rx + ry - 1])
    ys[axes[1]] = xs[axes[0]]
    out = [c for i, c in enumerate(xs) if i != axes[0]] + \
        [c for i, c in enumerate(ys) if i not in (0, axes[1])]
    result = einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
    return _a.expand_dims(result, 1) if len(out) == 1 else result  # (batch,) -> (batch, 1)


@serialization.register
class Dot(Layer):
    """The dot product of two inputs, per example: ``axes`` (an int, or one axis per
    input) are contracted; with ``normalize=True`` both are L2-normalized along them first,
    giving the cosine similarity. ``(batch, n)`` inputs give ``(batch, 1)``.

    >>> import stagecraft as tf
    >>> x, y = tf.constant([[1., 2.], [3., 4.]]), tf.constant([[1., 1.], [0., 1.]])
    >>> tf.keras.layers.Dot(axes=1)([x, y]).numpy().tolist()
    [[3.0], [4.0]]
    """

    def __init__(self, axes: int | Sequence[int], normalize: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            self.axes: Any = int(axes)
        elif isinstance(axes, (list, tuple)) and len(axes) == 2 and \
                all(isinstance(a, int) for a in axes):
            self.axes = [int(a) for a in axes]
        else:
            raise TypeError(f"Dot: axes must be an int or a list of two ints; got {axes!r}.")
        self.normalize = bool(normalize)

    def call(self, inputs: Sequence[Tensor]) -> Tensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs; received "
                             f"{type(inputs).__name__} of length {len(inputs)}.")
        x, y = inputs
        if x.shape.rank is None or y.shape.rank is None or min(x.shape.rank, y.shape.rank) < 2:
            raise ValueError(f"Dot: both inputs need a known rank of at least 2 (a batch "
                             f"axis and one more); got shapes {x.shape} and {y.shape}.")
        pair = [self.axes, self.axes] if isinstance(self.axes, int) else self.axes
        axes = (pair[0] % x.shape.rank, pair[1] % y.shape.rank)
        if 0 in axes:
            raise ValueError(f"Dot: cannot contract the batch axis (axes={self.axes}).")
        if x.shape[axes[0]] is not None and y.shape[axes[1]] is not None and \
                x.shape[axes[0]] != y.shape[axes[1]]:
            raise ValueError(f"Dot: the contracted dimensions differ: {x.shape[axes[0]]} (axis "
                             f"{axes[0]} of {x.shape}) vs {y.shape[axes[1]]} (axis {axes[1]} "
                             f"of {y.shape}).")
        if self.normalize:
            x, y = _nn.l2_normalize(x, axis=axes[0]), _nn.l2_normalize(y, axis=axes[1])
        return _batch_dot(x, y, axes)

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def add(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Add``: ``Add(**kwargs)(inputs)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.add([tf.ones([1, 2]), tf.ones([1, 2])]).numpy().tolist()
    [[2.0, 2.0]]
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Subtract``: ``inputs[0] - inputs[1]``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.subtract([tf.ones([1, 2]), tf.ones([1, 2])]).numpy().tolist()
    [[0.0, 0.0]]
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Multiply``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.multiply([tf.fill([1, 2], 2.), tf.fill([1, 2], 3.)]).numpy().tolist()
    [[6.0, 6.0]]
    """
    return Multiply(**kwargs)(inputs)


def average(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Average``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.average([tf.zeros([1]), tf.ones([1])]).numpy().tolist()
    [0.5]
    """
    return Average(**kwargs)(inputs)


def maximum(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Maximum``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.maximum([tf.zeros([1]), tf.ones([1])]).numpy().tolist()
    [1.0]
    """
    return Maximum(**kwargs)(inputs)


def minimum(inputs: Sequence[Any], **kwargs: Any) -> Tensor:
    """Functional form of ``Minimum``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.minimum([tf.zeros([1]), tf.ones([1])]).numpy().tolist()
    [0.0]
    """
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: Sequence[Any], axis: int = -1, **kwargs: Any) -> Tensor:
    """Functional form of ``Concatenate``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.concatenate([tf.ones([2, 1]), tf.zeros([2, 2])]).shape
    TensorShape([2, 3])
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: Sequence[Any], axes: int | Sequence[int] = -1, normalize: bool = False,
        **kwargs: Any) -> Tensor:
    """Functional form of ``Dot``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.dot([tf.ones([1, 3]), tf.ones([1, 3])], axes=1).numpy().tolist()
    [[3.0]]
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


__all__ += ["Dot", "add", "average", "concatenate", "dot", "maximum", "minimum", "multiply",
            "subtract"]
