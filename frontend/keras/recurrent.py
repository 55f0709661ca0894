"""Recurrent layers: the cells (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``: one time step),
``RNN`` (a cell run over the time axis as one ``while_loop``, so a staged model holds one loop,
not a copy of the cell per step) and ``SimpleRNN``/``LSTM``/``GRU``, with TF 2 Keras's
weights, formulas and defaults (LSTM gates i, f, c, o with the forget bias initialized to 1;
GRU gates z, r, h with ``reset_after=True``), and ``Bidirectional``."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import activations, constraints, initializers, regularizers, serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops.tensor_array import TensorArray
from stagecraft.staging.while_loop import while_loop

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU",
           "Bidirectional"]


class _Cell(Layer):
    """What the cells share: sizes, activations, initializers, and the input kernel."""

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0 <= float(rate) < 1:
                raise ValueError(f"{type(self).__name__}: {what} must be in [0, 1); got {rate}.")
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.seed = seed
        self._options = {
            "kernel_regularizer": kernel_regularizer, "recurrent_regularizer":
                recurrent_regularizer, "bias_regularizer": bias_regularizer,
            "kernel_constraint": kernel_constraint, "recurrent_constraint":
                recurrent_constraint, "bias_constraint": bias_constraint}
        self._options = {k: (regularizers if k.endswith("regularizer") else constraints).get(v)
                         for k, v in self._options.items()}
        if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
            raise ValueError(f"{type(self).__name__}: units must be a positive integer; got "
                             f"{units!r}.")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    _gates = 1

    @property
    def state_size(self) -> list[int]:
        return [self.units]

    def build(self, input_shape: Any) -> None:
        last = TensorShape(input_shape)[-1]
        if last is None:
            raise ValueError(f"{self.name}: the last dimension of the inputs (features) must "
                             f"be known.")
        n = self._gates * self.units
        self.kernel = self.add_weight("kernel", [last, n], initializer=self.kernel_initializer,
                                      **self._weight_options("kernel"))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [self.units, n],
                                                initializer=self.recurrent_initializer,
                                                **self._weight_options("recurrent"))
        self.bias = self.add_weight("bias", self._bias_shape(), initializer=self._bias_init(),
                                    **self._weight_options("bias")) \
            if self.use_bias else None
        self.built = True

    def _bias_shape(self) -> list[int]:
        return [self._gates * self.units]

    def _dropped(self, inputs: Tensor, h_prev: Tensor, training: Any) -> tuple[Tensor, Tensor]:
        """The step's input and previous output with Keras's dropout masks applied: the
        masks ``RNN`` drew for the whole sequence, or (a cell called alone while training)
        fresh ones. Recurrent dropout reaches only the recurrent product."""
        masks = vars(self).get("_sequence_masks")
        if masks is None and training:
            masks = self.dropout_masks(inputs, h_prev)
        if masks is None:
            return inputs, h_prev
        dp, rec = masks
        return (inputs if dp is None else _m.multiply(inputs, dp),
                h_prev if rec is None else _m.multiply(h_prev, rec))

    def dropout_masks(self, inputs: Tensor, h_prev: Tensor) -> tuple[Any, Any]:
        """Keras's masks for one sequence: ones dropped at ``dropout`` (inputs) and
        ``recurrent_dropout`` (previous output), scaled by 1 / (1 - rate); None where the
        rate is 0."""
        def mask(like: Tensor, rate: float) -> Any:
            if not rate:
                return None
            ones = _m.add(_m.multiply(like, 0.0), 1.0)
            return _nn.dropout(ones, rate, seed=self.seed)
        return mask(inputs, self.dropout), mask(h_prev, self.recurrent_dropout)

    def _weight_options(self, weight: str) -> dict:
        return {"regularizer": self._options[f"{weight}_regularizer"],
                "constraint": self._options[f"{weight}_constraint"]}

    def _bias_init(self) -> Any:
        return self.bias_initializer

    def _part(self, z: Tensor, k: int) -> Tensor:
        """Gate ``k`` of a matrix with the gates side by side on the last axis."""
        return z[..., k * self.units:(k + 1) * self.units]

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed,
                **{k: (regularizers if k.endswith("regularizer") else constraints)
                   .serialize_or_none(v) for k, v in self._options.items()}}


@serialization.register
class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + h_prev @ recurrent_kernel + bias)``."""

    def call(self, inputs: Tensor, states: Any, training: Any = None) -> tuple[Tensor, list]:
        x, h_prev = self._dropped(inputs, states[0], training)
        z = _m.add(_m.matmul(x, self.kernel), _m.matmul(h_prev, self.recurrent_kernel))
        if self.use_bias:
            z = _m.add(z, self.bias)
        h = self.activation(z)
        return h, [h]


class _ForgetBiasOnes:
    """LSTM's ``unit_forget_bias``: the bias initializer's values with ones for the forget
    gate (the second quarter), as Keras builds it."""

    def __init__(self, base: Any, units: int):
        self.base, self.units = base, units

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        u = self.units
        parts = [self.base((u,), dtype=dtype), _a.ones([u], dtype=dtype),
                 self.base((2 * u,), dtype=dtype)]
        return _a.concat(parts, 0)


@serialization.register
class LSTMCell(_Cell):
    """Keras's LSTM step: ``z = x @ kernel + h @ recurrent_kernel + bias`` split into gates
    ``i, f, c, o``; ``c = sigmoid(f) * c_prev + sigmoid(i) * tanh(c~)``, ``h = sigmoid(o) *
    tanh(c)`` (``activation``/``recurrent_activation`` replace tanh/sigmoid)."""

    _gates = 4

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, **kwargs: Any):
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> list[int]:
        return [self.units, self.units]

    def _bias_init(self) -> Any:
        return _ForgetBiasOnes(self.bias_initializer, self.units) if self.unit_forget_bias \
            else self.bias_initializer

    def call(self, inputs: Tensor, states: Any, training: Any = None) -> tuple[Tensor, list]:
        h_prev, c_prev = states
        x, h_dropped = self._dropped(inputs, h_prev, training)
        z = _m.add(_m.matmul(x, self.kernel), _m.matmul(h_dropped, self.recurrent_kernel))
        if self.use_bias:
            z = _m.add(z, self.bias)
        gate = self.recurrent_activation
        i, f, o = gate(self._part(z, 0)), gate(self._part(z, 1)), gate(self._part(z, 3))
        c = _m.add(_m.multiply(f, c_prev), _m.multiply(i, self.activation(self._part(z, 2))))
        h = _m.multiply(o, self.activation(c))
        return h, [h, c]

    def get_config(self) -> dict:
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


@serialization.register
class GRUCell(_Cell):
    """Keras's GRU step with ``reset_after=True`` (TF 2's default): the bias is ``(2, 3 *
    units)`` (input and recurrent parts); gates ``z, r, h``: ``z = sigmoid(x_z + r_z)``,
    ``r = sigmoid(x_r + r_r)``, ``h~ = tanh(x_h + r * r_h)``, ``h = z * h_prev + (1 - z) *
    h~``."""

    _gates = 3

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 reset_after: bool = True, **kwargs: Any):
        if not reset_after:
            raise ValueError("GRUCell: only reset_after=True (TensorFlow 2's default) is "
                             "supported.")
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = True

    def _bias_shape(self) -> list[int]:
        return [2, 3 * self.units]

    def call(self, inputs: Tensor, states: Any, training: Any = None) -> tuple[Tensor, list]:
        h_prev = states[0]
        dropped_x, h_dropped = self._dropped(inputs, h_prev, training)
        x = _m.matmul(dropped_x, self.kernel)
        inner = _m.matmul(h_dropped, self.recurrent_kernel)
        if self.use_bias:
            x, inner = _m.add(x, self.bias[0]), _m.add(inner, self.bias[1])
        gate = self.recurrent_activation
        z = gate(_m.add(self._part(x, 0), self._part(inner, 0)))
        r = gate(_m.add(self._part(x, 1), self._part(inner, 1)))
        hh = self.activation(_m.add(self._part(x, 2), _m.multiply(r, self._part(inner, 2))))
        h = _m.add(_m.multiply(z, h_prev), _m.multiply(_m.subtract(1.0, z), hh))
        return h, [h]

    def get_config(self) -> dict:
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": True}


@serialization.register
class RNN(Layer):
    """Runs ``cell`` over the time axis of inputs ``(batch, time, features)``: one
    ``while_loop`` reading the time steps from a TensorArray. Returns the last output, or
    every step's (``return_sequences``), followed by the final states (``return_state``).

    >>> import stagecraft as tf
    >>> rnn = tf.keras.layers.RNN(tf.keras.layers.SimpleRNNCell(3), return_sequences=True)
    >>> rnn(tf.ones([2, 5, 4])).shape
    TensorShape([2, 5, 3])
    """

    def __init__(self, cell: Layer, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False,
                 stateful: bool = False, unroll: bool = False, time_major: bool = False,
                 **kwargs: Any):
        if stateful or time_major:
            raise ValueError("RNN: stateful=True and time_major=True are not supported.")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.rank != 3:
            raise ValueError(f"{self.name}: expected inputs of shape (batch, time, features); "
                             f"got {shape}.")
        if not hasattr(self.cell, "state_size"):
            raise ValueError(f"{self.name}: the cell {type(self.cell).__name__} has no "
                             f"state_size; a cell defines state_size and call(inputs, states) "
                             f"returning (output, new_states).")
        if not self.cell.built:
            self.cell.build(TensorShape([shape[0], shape[2]]))
            self.cell.built = True
        self.built = True

    def call(self, inputs: Tensor, initial_state: Any = None, training: Any = None,
             mask: Any = None) -> Any:
        if mask is not None:
            raise ValueError(f"{self.name}: masks are not supported.")
        steps = _a.transpose(inputs, [1, 0, 2])  # time-major
        if self.go_backwards:
            steps = steps[::-1]
        batch = _a.shape(inputs)[0]
        sizes = _state_sizes(self.cell)
        if initial_state is None:
            states = [_a.zeros(_a.stack([batch, n]), dtype=inputs.dtype) for n in sizes]
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
        time = _a.shape(steps)[0]
        xs = TensorArray(inputs.dtype, size=time).unstack(steps)
        ys = TensorArray(inputs.dtype, size=time)
        size = getattr(self.cell, "output_size", None)
        size = sizes[0] if size is None else size
        first = _a.zeros(_a.stack([batch, size]), dtype=inputs.dtype)
        # Keras's own cells are called directly; a user's cell through __call__, so that
        # AutoGraph converts its Python control flow while tracing.
        step = self.cell.call if type(self.cell).__module__.startswith("stagecraft") \
            else self.cell

        def body(t: Tensor, ys: TensorArray, last: Tensor, *states: Tensor) -> tuple:
            y, new = step(xs.read(t), list(states))
            new = list(new) if isinstance(new, (list, tuple)) else [new]  # Keras allows one
            if len(new) != len(states):
                raise ValueError(f"{self.name}: the cell returned {len(new)} state(s), but its "
                                 f"state_size declares {len(states)}.")
            return (_m.add(t, 1), ys.write(t, y), y, *new)

        t0 = _a.zeros([], dtype=time.dtype)
        dropping = training and isinstance(self.cell, _Cell) and \
            (self.cell.dropout or self.cell.recurrent_dropout)
        if dropping:  # Keras: one mask per sequence, the same at every step
            vars(self.cell)["_sequence_masks"] = self.cell.dropout_masks(steps[0], states[0])
        try:
            out = while_loop(lambda t, *_: _m.less(t, time), body, (t0, ys, first, *states))
        finally:
            vars(self.cell).pop("_sequence_masks", None)
        _, ys, last, *final = out
        result = _a.transpose(ys.stack(), [1, 0, 2]) if self.return_sequences else last
        return [result, *final] if self.return_state else result

    def get_config(self) -> dict:
        return {**super().get_config(), "cell": serialization.serialize(self.cell),
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "RNN":
        config = dict(config)
        config["cell"] = serialization.deserialize(config["cell"], custom_objects)
        return cls(**config)


def _state_sizes(cell: Any) -> list[int]:
    """A cell's ``state_size`` as a flat list: Keras allows an int for a single state."""
    size = cell.state_size
    sizes = [size] if isinstance(size, int) else list(size)
    if not all(isinstance(n, int) and n > 0 for n in sizes):
        raise ValueError(f"The cell {type(cell).__name__} has state_size {size!r}; expected a "
                         f"positive int or a list of them (one per state vector).")
    return sizes


class _Recurrent(RNN):
    """``SimpleRNN``/``LSTM``/``GRU``: an ``RNN`` of its own cell, configured by the cell's
    arguments (Keras's flat configs)."""

    _cell_class: type
    _cell_name: str

    def __init__(self, units: int, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, **kwargs: Any):
        layer_args = {k: kwargs.pop(k) for k in list(kwargs) if k in _LAYER_ARGS}
        cell = self._cell_class(units, name=self._cell_name, dtype=layer_args.get("dtype"),
                                trainable=layer_args.get("trainable", True), **kwargs)
        super().__init__(cell, return_sequences, return_state, go_backwards, stateful, unroll,
                         time_major, **layer_args)

    @property
    def units(self) -> int:
        return self.cell.units

    def get_config(self) -> dict:
        cell = {k: v for k, v in self.cell.get_config().items()
                if k not in ("name", "trainable", "dtype")}
        base = Layer.get_config(self)
        return {**base, **cell, "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "RNN":
        return cls(**config)


_LAYER_ARGS = {"name", "trainable", "dtype", "input_shape", "batch_input_shape", "input_dim",
               "batch_size", "activity_regularizer"}


@serialization.register
class SimpleRNN(_Recurrent):
    """A fully connected recurrent layer (``SimpleRNNCell`` over time).

    >>> import stagecraft as tf
    >>> tf.keras.layers.SimpleRNN(4)(tf.ones([2, 3, 5])).shape
    TensorShape([2, 4])
    """
    _cell_class, _cell_name = SimpleRNNCell, "simple_rnn_cell"


@serialization.register
class LSTM(_Recurrent):
    """Long short-term memory (``LSTMCell`` over time).

    >>> import stagecraft as tf
    >>> out, h, c = tf.keras.layers.LSTM(4, return_state=True)(tf.ones([2, 3, 5]))
    >>> out.shape, c.shape
    (TensorShape([2, 4]), TensorShape([2, 4]))
    """
    _cell_class, _cell_name = LSTMCell, "lstm_cell"


@serialization.register
class GRU(_Recurrent):
    """Gated recurrent unit (``GRUCell`` over time, ``reset_after=True``).

    >>> import stagecraft as tf
    >>> tf.keras.layers.GRU(4, return_sequences=True)(tf.ones([2, 3, 5])).shape
    TensorShape([2, 3, 4])
    """
    _cell_class, _cell_name = GRUCell, "gru_cell"


@serialization.register
class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards over time and merges their
    outputs (``merge_mode``: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"``, or
    None for a list of both). With ``return_sequences`` the backward outputs are put back in
    time order first, as Keras does.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3))(tf.ones([2, 4, 5])).shape
    TensorShape([2, 6])
    """

    _MODES = ("concat", "sum", "mul", "ave", None)

    def __init__(self, layer: Layer, merge_mode: str | None = "concat",
                 backward_layer: Layer | None = None, **kwargs: Any):
        if merge_mode not in self._MODES:
            raise ValueError(f"Bidirectional: merge_mode must be one of {self._MODES}; got "
                             f"{merge_mode!r}.")
        if not isinstance(layer, Layer) or not hasattr(layer, "go_backwards"):
            raise ValueError(f"Bidirectional: `layer` must be a recurrent layer (RNN, LSTM, "
                             f"GRU, SimpleRNN, ConvLSTM2D, ...); got {type(layer).__name__}.")
        kwargs.setdefault("dtype", layer.dtype)  # no cast of the inputs before the layers
        super().__init__(**kwargs)
        self.forward_layer = layer
        if backward_layer is None:
            config = {**layer.get_config(), "go_backwards": not layer.go_backwards,
                      "name": "backward_" + layer.name}
            backward_layer = type(layer).from_config(config)
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def call(self, inputs: Tensor, training: Any = None) -> Any:
        forward, backward = self.forward_layer(inputs), self.backward_layer(inputs)
        states: list = []
        if self.return_state:
            forward, *f_states = forward
            backward, *b_states = backward
            states = f_states + b_states
        if self.return_sequences:
            backward = backward[:, ::-1]
        if self.merge_mode == "concat":
            out: Any = _a.concat([forward, backward], -1)
        elif self.merge_mode == "sum":
            out = _m.add(forward, backward)
        elif self.merge_mode == "mul":
            out = _m.multiply(forward, backward)
        elif self.merge_mode == "ave":
            out = _m.multiply(_m.add(forward, backward), 0.5)
        else:
            out = [forward, backward]
        if not self.return_state:
            return out
        return (out if isinstance(out, list) else [out]) + states

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": serialization.serialize(self.forward_layer),
                "merge_mode": self.merge_mode}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Bidirectional":
        config = dict(config)
        config["layer"] = serialization.deserialize(config["layer"], custom_objects)
        return cls(**config)
