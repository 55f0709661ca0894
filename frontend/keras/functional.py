"""Keras's Functional API: ``keras.Input`` gives a symbolic ``KerasTensor``; calling layers on
KerasTensors records the calls (building each layer's weights at once) and gives KerasTensors
of the outputs' shapes; ``keras.Model(inputs, outputs)`` replays the recorded calls on real
tensors, in order. Layers may be shared (called on several KerasTensors: one set of weights),
and a model may have several inputs and outputs (lists or dicts).

Output shapes are learned by calling the layer eagerly on zeros twice, with every unknown
dimension 1 and then 2: the dims that differ are unknown (None) in the KerasTensor."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from stagecraft.data import structure
from stagecraft.eager.scopes import init_scope
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import backend, serialization
from stagecraft.keras.base_layer import Layer, _accepts

__all__ = ["KerasTensor", "Input", "InputLayer", "Functional", "is_symbolic", "call_symbolic"]

_ids = itertools.count()


class KerasTensor:
    """A symbolic tensor of the Functional API: a shape (batch dim usually None) and a dtype,
    and the layer call that produces it (None for an ``Input``)."""

    def __init__(self, shape: Any, dtype: Any, name: str | None = None,
                 node: "Node | None" = None, index: int = 0):
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name or f"keras_tensor_{next(_ids)}"
        self.node = node
        self.index = index

    def __repr__(self) -> str:
        return (f"<KerasTensor shape={tuple(self.shape.as_list())} dtype={self.dtype.name} "
                f"name={self.name!r}>")

    def __bool__(self) -> bool:
        raise TypeError("A symbolic KerasTensor has no truth value: it stands for the values a "
                        "Functional model will be called with. Use layers to compute with it.")

    def _op_error(self, *args: Any) -> Any:
        raise TypeError(
            f"Tensor operations on a KerasTensor ({self.name}) are not recorded by this "
            f"Functional API: wrap the computation in a layer, e.g. "
            f"tf.keras.layers.Lambda(lambda x: ...), or use tf.keras.layers.Add / Concatenate.")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _op_error
    __truediv__ = __rtruediv__ = __matmul__ = __getitem__ = __neg__ = _op_error

    @staticmethod
    def _record_layer_call(layer: Layer, inputs: Any, kwargs: dict) -> Any:
        """What ``Layer.__call__`` does when its inputs hold KerasTensors (a protocol, so the
        layer base class need not import this module)."""
        return call_symbolic(layer, inputs, kwargs)


def is_symbolic(inputs: Any) -> bool:
    """Whether a layer call's inputs hold KerasTensors (then the call is recorded)."""
    return any(isinstance(x, KerasTensor) for x in structure.flatten(_tuples(inputs)))


def _tuples(value: Any) -> Any:
    """Lists as tuples, so a list of inputs nests like a tuple."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, tuple):
        return type(value)(*map(_tuples, value)) if hasattr(type(value), "_fields") else \
            tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


class Node:
    """One recorded layer call: the layer, its inputs (a structure of KerasTensors, lists
    kept), its keyword arguments, and its outputs."""

    def __init__(self, layer: Layer, inputs: Any, kwargs: dict):
        self.layer, self.inputs, self.kwargs = layer, inputs, kwargs
        self.outputs: Any = None

    def parents(self) -> list["Node"]:
        return [t.node for t in structure.flatten(_tuples((self.inputs, self.kwargs)))
                if isinstance(t, KerasTensor) and t.node is not None]


def _zeros(spec: KerasTensor, unknown: int) -> Tensor:
    dims = [unknown if d is None else d for d in spec.shape.as_list()]
    return wrap(np.zeros(dims, spec.dtype.np))


def call_symbolic(layer: Layer, inputs: Any, kwargs: dict) -> Any:
    """Records ``layer(inputs, **kwargs)`` on KerasTensors and returns the output
    KerasTensors (their unknown dims found by two eager probe calls)."""
    outs = []
    with init_scope():
        for unknown in (1, 2):
            def probe(value: Any) -> Any:
                concrete = structure.map_structure(
                    lambda x: _zeros(x, unknown) if isinstance(x, KerasTensor) else x,
                    _tuples(value))
                return _relist(value, concrete)
            outs.append(layer(probe(inputs), **{k: probe(v) for k, v in kwargs.items()}))
    node = Node(layer, inputs, kwargs)
    flat = [(a, b) for a, b in zip(structure.flatten(_tuples(outs[0])),
                                   structure.flatten(_tuples(outs[1])))]
    symbolic = []
    for i, (a, b) in enumerate(flat):
        dims = [d if d == e else None for d, e in zip(a.shape.as_list(), b.shape.as_list())]
        symbolic.append(KerasTensor(dims, a.dtype, name=f"{layer.name}/out{i}", node=node,
                                    index=i))
    node.outputs = _relist(outs[0], structure.pack(_tuples(outs[0]), symbolic))
    return node.outputs


def _relist(template: Any, value: Any) -> Any:
    """``value`` (built with tuples for lists) with the lists of ``template`` restored."""
    if isinstance(template, list):
        return [_relist(t, v) for t, v in zip(template, value)]
    if isinstance(template, tuple) and not hasattr(type(template), "_fields"):
        return tuple(_relist(t, v) for t, v in zip(template, value))
    if isinstance(template, dict):
        return {k: _relist(template[k], value[k]) for k in template}
    return value


@serialization.register
class InputLayer(Layer):
    """The layer of a Functional model's input (listed first in ``model.layers``)."""

    def __init__(self, input_shape: Any = None, batch_size: int | None = None,
                 dtype: Any = None, name: str | None = None, **kwargs: Any):
        super().__init__(name=name or backend.unique_input_name(), dtype=dtype)
        shape = [] if input_shape is None else list(input_shape)
        self._batch_input_shape = (batch_size, *shape)
        self.built = True

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self._dtype.name,
                "batch_input_shape": list(self._batch_input_shape)}

    @classmethod
    def from_config(cls, config: dict) -> "InputLayer":
        shape = config.get("batch_input_shape")
        if not isinstance(shape, list) or not shape:
            raise ValueError(f"InputLayer config: batch_input_shape must be a non-empty list; "
                             f"got {shape!r}.")
        return cls(tuple(shape[1:]), shape[0], config.get("dtype"), config.get("name"))

    def call(self, inputs: Any) -> Any:
        return inputs


def Input(shape: Any = None, batch_size: int | None = None, name: str | None = None,  # noqa: N802
          dtype: Any = None, sparse: bool | None = None, tensor: Any = None,
          ragged: bool | None = None, batch_shape: Any = None) -> KerasTensor:
    """A symbolic input of a Functional model: ``shape`` excludes the batch dimension.

    >>> import stagecraft as tf
    >>> x = tf.keras.Input(shape=(3,))
    >>> y = tf.keras.layers.Dense(2)(x)
    >>> model = tf.keras.Model(inputs=x, outputs=y)
    >>> y.shape, model(tf.ones([4, 3])).shape
    (TensorShape([None, 2]), TensorShape([4, 2]))
    """
    if sparse or ragged or tensor is not None:
        raise ValueError("keras.Input: sparse, ragged and tensor= inputs are not supported.")
    if batch_shape is not None:
        batch_size, shape = batch_shape[0], batch_shape[1:]
    if shape is None:
        raise ValueError("keras.Input: pass `shape` (the shape of one example, without the "
                         "batch dimension), e.g. keras.Input(shape=(784,)).")
    layer = InputLayer(tuple(shape), batch_size, dtype, name)
    t = KerasTensor((batch_size, *shape), layer._dtype, name=layer.name)
    t.input_layer = layer
    return t


class Functional:
    """The graph of a Functional model (``keras.Model(inputs, outputs)``): its inputs, its
    outputs, and its layer calls in an order where every call comes after its inputs'."""

    def __init__(self, inputs: Any, outputs: Any):
        for t in structure.flatten(_tuples(inputs)):
            if not isinstance(t, KerasTensor) or t.node is not None:
                raise ValueError(f"Model(inputs, outputs): every input must be a tensor made "
                                 f"by keras.Input(); got {t!r}.")
        for t in structure.flatten(_tuples(outputs)):
            if not isinstance(t, KerasTensor):
                raise ValueError(f"Model(inputs, outputs): every output must be a KerasTensor "
                                 f"computed from the inputs by layers; got {t!r}.")
        self.inputs, self.outputs = inputs, outputs
        self.nodes = self._order()
        reachable = {id(t) for t in structure.flatten(_tuples(inputs))}
        for node in self.nodes:
            for t in structure.flatten(_tuples(node.inputs)):
                if isinstance(t, KerasTensor) and t.node is None and id(t) not in reachable:
                    raise ValueError(f"Model(inputs, outputs): the output depends on input "
                                     f"{t.name!r}, which is not among the model's inputs.")

    def _order(self) -> list[Node]:
        order: list[Node] = []
        done: set[int] = set()

        def visit(node: Node) -> None:
            if id(node) in done:
                return
            for parent in node.parents():
                visit(parent)
            done.add(id(node))
            order.append(node)

        for t in structure.flatten(_tuples(self.outputs)):
            if t.node is not None:
                visit(t.node)
        return order

    # ------------------------------------------------------------------ configs

    def config(self) -> dict:
        """The graph as JSON-able data: every layer's config (by unique name), each recorded
        call (layer name, inputs as references to earlier calls' outputs or to the model's
        inputs, keyword arguments), and the model's inputs and outputs as references. A
        reference is ``{"node": i, "index": k}`` (output ``k`` of call ``i``) or
        ``{"input": j}``; a dict of references is ``{"dict": {...}}``."""
        layers = self.layers()
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"A Functional model's layers need unique names to be saved; got "
                             f"{sorted(n for n in set(names) if names.count(n) > 1)}.")
        symbols = structure.flatten(_tuples(self.inputs))
        where: dict[int, dict] = {id(t): {"input": j} for j, t in enumerate(symbols)}
        nodes = []
        for i, node in enumerate(self.nodes):
            kwargs = {}
            for k, v in node.kwargs.items():
                if any(isinstance(t, KerasTensor) for t in structure.flatten(_tuples(v))):
                    kwargs[k] = {"tensors": _encode(v, where)}
                    continue
                kwargs[k] = v
                if not isinstance(v, (bool, int, float, str, type(None))):
                    raise ValueError(f"Layer {node.layer.name!r} was called with {k}={v!r}, "
                                     f"which a saved config cannot hold (numbers, strings and "
                                     f"booleans only).")
            nodes.append({"layer": node.layer.name, "inputs": _encode(node.inputs, where),
                          "kwargs": kwargs})
            for k, t in enumerate(structure.flatten(_tuples(node.outputs))):
                where[id(t)] = {"node": i, "index": k}
        return {"layers": [serialization.serialize(layer) for layer in layers],
                "inputs": _encode(self.inputs, where), "nodes": nodes,
                "outputs": _encode(self.outputs, where)}

    @staticmethod
    def rebuild(config: dict, custom_objects: dict | None = None) -> tuple[Any, Any]:
        """The ``(inputs, outputs)`` KerasTensors of a graph ``config``: the layers created
        from their configs, the calls replayed in order."""
        layers: dict[str, Layer] = {}
        for spec in _list(config, "layers"):
            layer = serialization.deserialize(spec, custom_objects)
            if layer.name in layers:
                raise ValueError(f"the config names layer {layer.name!r} twice")
            layers[layer.name] = layer
        inputs = [layer for layer in layers.values() if isinstance(layer, InputLayer)]
        symbols = []
        for layer in inputs:
            t = KerasTensor(layer._batch_input_shape, layer._dtype, name=layer.name)
            t.input_layer = layer
            symbols.append(t)
        made: list[list] = []
        for i, node in enumerate(_list(config, "nodes")):
            if not isinstance(node, dict) or node.get("layer") not in layers:
                raise ValueError(f"call {i} names no layer of the config: {str(node)[:200]}")
            kwargs = node.get("kwargs", {})
            if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                raise ValueError(f"call {i}: kwargs must be a dict of named values")
            kwargs = {k: _decode(v["tensors"], symbols, made)
                      if isinstance(v, dict) and set(v) == {"tensors"} else v
                      for k, v in kwargs.items()}
            args = _decode(node.get("inputs"), symbols, made)
            out = layers[node["layer"]](args, **kwargs)
            made.append(structure.flatten(_tuples(out)))
        return _decode(config.get("inputs"), symbols, made), \
            _decode(config.get("outputs"), symbols, made)

    def note_output_shapes(self) -> None:
        """What ``summary()`` prints per layer: the output shape of a layer called once with
        one output (``[(None, 3)]`` for an input, as Keras prints it), else "multiple"."""
        for t in structure.flatten(_tuples(self.inputs)):
            t.input_layer._summary_output_shape = [tuple(t.shape.as_list())]
        calls: dict[int, list] = {}
        for node in self.nodes:
            calls.setdefault(id(node.layer), []).append(node)
        for nodes in calls.values():
            outs = structure.flatten(_tuples(nodes[0].outputs))
            if len(nodes) == 1 and len(outs) == 1:
                nodes[0].layer._summary_output_shape = tuple(outs[0].shape.as_list())

    def layers(self) -> list[Layer]:
        """The input layers, then every called layer once, in call order."""
        out = [t.input_layer for t in structure.flatten(_tuples(self.inputs))]
        for node in self.nodes:
            if node.layer not in out:
                out.append(node.layer)
        return out

    def run(self, inputs: Any, training: Any = None) -> Any:
        """The outputs for real ``inputs`` (the same structure as the model's inputs; a
        single tensor for a single input)."""
        values: dict[int, Any] = {}
        given = structure.flatten(_tuples(inputs)) if isinstance(inputs, (list, tuple, dict)) \
            else [inputs]
        symbols = structure.flatten(_tuples(self.inputs))
        if len(given) != len(symbols):
            raise ValueError(f"The model expects {len(symbols)} input(s) "
                             f"({', '.join(t.name for t in symbols)}) but received "
                             f"{len(given)}.")
        for t, v in zip(symbols, given):
            values[id(t)] = v
        for node in self.nodes:
            def real(value: Any) -> Any:
                return _relist(value, structure.map_structure(
                    lambda t: values[id(t)] if isinstance(t, KerasTensor) else t,
                    _tuples(value)))
            args = real(node.inputs)
            kwargs = {k: real(v) for k, v in node.kwargs.items()}
            if training is not None and _accepts(type(node.layer).call, "training"):
                kwargs["training"] = training
            out = node.layer(args, **kwargs)
            for t, v in zip(structure.flatten(_tuples(node.outputs)),
                            structure.flatten(_tuples(out))):
                values[id(t)] = v
        return _relist(self.outputs, structure.map_structure(lambda t: values[id(t)],
                                                             _tuples(self.outputs)))


def _list(config: dict, key: str) -> list:
    value = config.get(key)
    if not isinstance(value, list):
        raise ValueError(f"the config's {key!r} must be a list; got {type(value).__name__}")
    return value


def _encode(value: Any, where: dict[int, dict]) -> Any:
    if isinstance(value, KerasTensor):
        return where[id(value)]
    if isinstance(value, (list, tuple)):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        return {"dict": {k: _encode(v, where) for k, v in value.items()}}
    raise ValueError(f"a Functional model's structure holds {value!r}, which a saved config "
                     f"cannot hold")


def _decode(value: Any, symbols: list, made: list[list]) -> Any:
    """The KerasTensors a reference structure names (checked: indices must exist)."""
    if isinstance(value, list):
        return [_decode(v, symbols, made) for v in value]
    if isinstance(value, dict) and set(value) == {"dict"} and isinstance(value["dict"], dict):
        return {str(k): _decode(v, symbols, made) for k, v in value["dict"].items()}
    if isinstance(value, dict) and set(value) == {"input"}:
        j = value["input"]
        if isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(symbols):
            return symbols[j]
    if isinstance(value, dict) and set(value) == {"node", "index"}:
        i, k = value["node"], value["index"]
        if all(isinstance(n, int) and not isinstance(n, bool) for n in (i, k)) and \
                0 <= i < len(made) and 0 <= k < len(made[i]):
            return made[i][k]
    raise ValueError(f"invalid reference in the config: {str(value)[:200]} (it must name an "
                     f"input or an output of an earlier call)")
