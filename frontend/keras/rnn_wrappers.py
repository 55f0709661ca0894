"""``StackedRNNCells`` (several cells as one, for ``RNN``), and the ``Wrapper`` layers
around another layer: ``TimeDistributed`` (a layer applied to every time step)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.recurrent import _state_sizes
from stagecraft.ops import array_ops as _a

__all__ = ["StackedRNNCells", "TimeDistributed", "Wrapper"]


@serialization.register
class StackedRNNCells(Layer):
    """Cells run one after the other within each time step: the output of one is the input
    of the next; the states are all the cells' states, in order (Keras's
    ``StackedRNNCells``).

    >>> import stagecraft as tf
    >>> cells = [tf.keras.layers.LSTMCell(4), tf.keras.layers.GRUCell(3)]
    >>> rnn = tf.keras.layers.RNN(tf.keras.layers.StackedRNNCells(cells), return_state=True)
    >>> [t.shape for t in rnn(tf.ones([2, 5, 6]))]
    [TensorShape([2, 3]), TensorShape([2, 4]), TensorShape([2, 4]), TensorShape([2, 3])]
    """

    def __init__(self, cells: list, **kwargs: Any):
        super().__init__(**kwargs)
        cells = list(cells)
        if not cells:
            raise ValueError("StackedRNNCells: pass at least one cell.")
        for cell in cells:
            if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
                raise ValueError(f"StackedRNNCells: every cell needs state_size and call(inputs, "
                                 f"states); got {type(cell).__name__}.")
        self.cells = cells

    @property
    def state_size(self) -> list[int]:
        return [n for cell in self.cells for n in _state_sizes(cell)]

    @property
    def output_size(self) -> int:
        last = self.cells[-1]
        size = getattr(last, "output_size", None)
        return _state_sizes(last)[0] if size is None else size

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        for cell in self.cells:
            if not cell.built:
                cell.build(shape)
                cell.built = True
            size = getattr(cell, "output_size", None)
            size = _state_sizes(cell)[0] if size is None else size
            shape = TensorShape([shape[0], size])
        self.built = True

    def call(self, inputs: Tensor, states: Any) -> tuple[Tensor, list[Tensor]]:
        states = list(states)
        new_states: list[Tensor] = []
        x = inputs
        for cell in self.cells:
            n = len(_state_sizes(cell))
            mine, states = states[:n], states[n:]
            step = cell.call if type(cell).__module__.startswith("stagecraft") else cell
            x, new = step(x, mine)
            new_states += list(new) if isinstance(new, (list, tuple)) else [new]
        return x, new_states

    def get_config(self) -> dict:
        return {**super().get_config(),
                "cells": [serialization.serialize(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "StackedRNNCells":
        config = dict(config)
        config["cells"] = [serialization.deserialize(c, custom_objects)
                           for c in config["cells"]]
        return cls(**config)


@serialization.register
class Wrapper(Layer):
    """Base class of layers that wrap another ``layer`` (its weights are the wrapper's);
    the config holds the wrapped layer's.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Wrapper(tf.keras.layers.Dense(2)).layer.units
    2
    """

    def __init__(self, layer: Layer, **kwargs: Any):
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__}: `layer` must be a Keras layer; got "
                             f"{type(layer).__name__}.")
        super().__init__(**kwargs)
        self.layer = layer

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return self.layer(inputs, *args, **kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Wrapper":
        config = dict(config)
        config["layer"] = serialization.deserialize(config["layer"], custom_objects)
        return cls(**config)


@serialization.register
class TimeDistributed(Wrapper):
    """Applies ``layer`` to every time step of ``(batch, time, ...)`` inputs, with the same
    weights: the steps are folded into the batch, the layer runs once, and the result is
    unfolded to ``(batch, time, ...)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(8))(tf.ones([2, 10, 3])).shape
    TensorShape([2, 10, 8])
    """

    def call(self, inputs: Tensor, training: Any = None) -> Tensor:
        if inputs.shape.rank is not None and inputs.shape.rank < 3:
            raise ValueError(f"TimeDistributed expects inputs of rank >= 3 (batch, time, "
                             f"...); got shape {inputs.shape}.")
        dims = inputs.shape.as_list()
        shape = _a.shape(inputs)
        if None not in dims[2:]:
            folded = _a.reshape(inputs, [-1] + dims[2:])
        else:
            folded = _a.reshape(inputs, _a.concat([[-1], shape[2:]], 0))
        kwargs = {} if training is None else {"training": training}
        out = self.layer(folded, **kwargs)
        out_dims = out.shape.as_list()[1:]
        batch = dims[0] if dims[0] is not None else shape[0]
        steps = dims[1] if dims[1] is not None else shape[1]
        if None not in out_dims and isinstance(batch, int) and isinstance(steps, int):
            return _a.reshape(out, [batch, steps] + out_dims)
        return _a.reshape(out, _a.concat([_a.stack([batch, steps]), _a.shape(out)[1:]], 0))
