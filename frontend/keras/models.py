"""``keras.Model`` (subclassing API) and ``keras.Sequential``."""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable

from stagecraft.ops import array_ops as _a
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras.base_layer import Layer, _accepts
from stagecraft.data import structure
from stagecraft.keras import backend, saving, serialization
from stagecraft.keras.functional import Functional, _tuples
from stagecraft.keras.training import Trainer
from stagecraft.eager.scopes import name_scope
from stagecraft.eager.tensor import Tensor


class Model(Trainer, Layer):
    """A layer made of layers: subclass it, create the layers in ``__init__`` (as attributes)
    and write the forward pass in ``call(self, inputs, training=None)`` — the TF Eager paper's
    Listing 3. Weights are created on the first call; ``variables``/``trainable_variables``
    list every weight of every sub-layer.

    >>> import stagecraft as tf
    >>> class MNISTModel(tf.keras.Model):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.dense1 = tf.keras.layers.Dense(units=10)
    ...         self.dense2 = tf.keras.layers.Dense(units=10)
    ...     def call(self, input):
    ...         result = self.dense1(input)
    ...         result = self.dense2(result)
    ...         result = self.dense2(result)  # reuse variables from dense2 layer
    ...         return result
    >>> model = MNISTModel()
    >>> model(tf.zeros([1, 784])).shape
    TensorShape([1, 10])
    >>> [tuple(v.shape.as_list()) for v in model.trainable_variables]
    [(784, 10), (10,), (10, 10), (10,)]

    ``Model(inputs, outputs)``, with ``inputs`` from ``keras.Input``, builds a Functional
    model instead (``FunctionalModel``).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "Model":
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(FunctionalModel)  # Keras's Model(inputs, outputs)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise TypeError(
                f"{type(self).__name__}: a subclass of Model takes no inputs/outputs; call "
                f"tf.keras.Model(inputs, outputs) itself for a Functional model.")
        super().__init__(**kwargs)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """The forward pass; subclasses must override it."""
        raise NotImplementedError(
            f"Unimplemented `tf.keras.Model.call()`: {type(self).__name__} must override "
            f"`call(self, inputs, training=None)` with its forward pass.")

    def build(self, input_shape: Any) -> None:
        """Creates the weights for inputs of ``input_shape`` (batch dimension first; None
        allowed) by running the model once on zeros. During the first call it only marks the
        model built (the sub-layers build themselves as ``call`` reaches them)."""
        if self._building_from_call:
            self.built = True
            return
        if input_shape is None:
            raise ValueError(f"{type(self).__name__}.build: input_shape must be given, e.g. "
                             f"model.build((None, 784)).")
        shape = TensorShape(input_shape)
        if shape.rank is None:
            raise ValueError(f"{type(self).__name__}.build: input_shape must have a known "
                             f"rank, got {shape}.")
        self(_a.zeros([1 if d is None else d for d in shape.as_list()], dtype=self.dtype))

    @property
    def layers(self) -> list[Layer]:
        """The direct sub-layers, in the order they were assigned."""
        return [c for c in self._children() if isinstance(c, Layer)]

    def summary(self, line_length: int | None = None, positions: list | None = None,
                print_fn: Callable[[str], Any] | None = None) -> None:
        """Prints the layers with their output shapes (``multiple`` for a subclassed model,
        as Keras) and parameter counts, then the totals; ``print_fn`` receives each line.
        Raises ValueError before the model is built.

        >>> import stagecraft as tf
        >>> tf.keras.backend.clear_session()
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)),
        ...                              tf.keras.layers.Dense(1)])
        >>> model.summary()
        Model: "sequential"
        _________________________________________________________________
        Layer (type)                 Output Shape              Param #
        =================================================================
        dense (Dense)                (None, 4)                 16
        _________________________________________________________________
        dense_1 (Dense)              (None, 1)                 5
        =================================================================
        Total params: 21
        Trainable params: 21
        Non-trainable params: 0
        _________________________________________________________________
        """
        from stagecraft.keras.summary import summarize
        summarize(self, line_length, positions, print_fn)

    def save_weights(self, filepath: str, overwrite: bool = True) -> str:
        """Writes the weights as a TensorFlow-format checkpoint with the model as the root
        (``tf.train.Checkpoint(root=model).write(filepath)``; keys such as
        ``dense1/kernel/.ATTRIBUTES/VARIABLE_VALUE``). Returns ``filepath``.

        >>> import os, tempfile, stagecraft as tf
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
        >>> path = model.save_weights(os.path.join(tempfile.mkdtemp(), "weights"))
        >>> clone = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        >>> _ = clone.load_weights(path); _ = clone(tf.ones([1, 2]))  # restored when built
        >>> bool(tf.reduce_all(clone.layers[0].kernel == model.layers[0].kernel))
        True
        """
        if filepath.endswith((".h5", ".keras")):
            raise ValueError(f"save_weights: {filepath!r} asks for the HDF5/.keras format, "
                             f"which stagecraft does not write. Use a path without that "
                             f"extension (a TensorFlow checkpoint prefix).")
        if not overwrite and os.path.exists(filepath + ".index"):
            raise FileExistsError(f"save_weights: {filepath}.index exists and overwrite=False. "
                                  f"Pass overwrite=True or choose another path.")
        from stagecraft.train import Checkpoint
        return Checkpoint(root=self).write(filepath)

    def load_weights(self, filepath: str) -> Any:
        """Reads weights written by ``save_weights`` (matched by attribute names, not by
        order); weights not built yet are assigned when they are created. Returns the
        checkpoint status (``assert_consumed()``, ``expect_partial()``)."""
        from stagecraft.train import Checkpoint
        return Checkpoint(root=self).read(filepath)

    def save(self, filepath: str, overwrite: bool = True, **kwargs: Any) -> None:
        """Saves the model to a ``.keras`` file: its config (the layers and how they connect),
        its weights and its compile settings, in a zip of JSON and NumPy arrays (no pickle);
        ``keras.models.load_model`` rebuilds it. Sequential and Functional models of built-in
        layers can be saved; other paths are SavedModel directories (``tf.saved_model.save``).

        >>> import os, tempfile, numpy as np, stagecraft as tf
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
        >>> path = os.path.join(tempfile.mkdtemp(), "model.keras"); model.save(path)
        >>> again = tf.keras.models.load_model(path)
        >>> bool(np.all(again.predict(np.ones((1, 3)), verbose=0) ==
        ...             model.predict(np.ones((1, 3)), verbose=0)))
        True
        """
        if kwargs:
            raise TypeError(f"save: unexpected keyword argument(s) {', '.join(kwargs)}.")
        if not str(filepath).endswith(".keras"):
            raise ValueError(f"Model.save: {filepath!r} must end in .keras (the Keras file "
                             f"format); for a SavedModel directory use "
                             f"tf.saved_model.save(model, path).")
        saving.save_model(self, filepath, overwrite=overwrite)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} built={self.built}>"


@serialization.register
class Sequential(Model):
    """A linear stack of layers: each layer's output is the next one's input.

    Layer ``i`` is held in the attribute ``"layer-i"`` (TensorFlow's checkpoint edge name for
    a Sequential model's layers). When the first layer is given ``input_shape=``, the weights
    are created at once; otherwise on the first call.

    >>> import stagecraft as tf
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu",
    ...                                                    input_shape=(3,)),
    ...                              tf.keras.layers.Dense(1)])
    >>> len(model.weights), model(tf.ones([2, 3])).shape
    (4, TensorShape([2, 1]))
    """

    def __init__(self, layers: Iterable[Layer] | None = None, name: str | None = None):
        super().__init__(name=name)
        for layer in layers or ():
            self.add(layer)

    def add(self, layer: Layer) -> None:
        """Appends ``layer`` to the stack (and builds it when the input shape is known).

        >>> import stagecraft as tf
        >>> model = tf.keras.Sequential()
        >>> model.add(tf.keras.layers.Dense(2)); model.add(tf.keras.layers.Dense(1))
        >>> model(tf.ones([4, 3])).shape, len(model.layers)
        (TensorShape([4, 1]), 2)
        """
        if hasattr(type(layer), "_record_layer_call"):  # keras.Input(...) first, as Keras allows
            if self.layers:
                raise TypeError("Sequential.add: a keras.Input may only come first.")
            self._batch_input_shape = tuple(layer.shape.as_list())
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: the added layer must be an instance of class "
                            f"Layer. Received: layer={layer!r} of type "
                            f"{type(layer).__name__}.")
        index = len(self.layers)
        setattr(self, f"layer-{index}", layer)
        if index == 0 and layer._batch_input_shape is not None:
            self._batch_input_shape = layer._batch_input_shape
        if self._batch_input_shape is not None:
            self.build(self._batch_input_shape)

    def pop(self) -> Layer:
        """Removes and returns the last layer.

        >>> import stagecraft as tf
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2), tf.keras.layers.Flatten()])
        >>> type(model.pop()).__name__, len(model.layers)
        ('Flatten', 1)
        """
        layers = self.layers
        if not layers:
            raise TypeError("Sequential.pop: there are no layers in the model.")
        delattr(self, f"layer-{len(layers) - 1}")
        return layers[-1]

    @property
    def layers(self) -> list[Layer]:
        """The layers, in stack order."""
        found = []
        for key, value in vars(self).items():
            if key.startswith("layer-") and key[6:].isdigit() and isinstance(value, Layer):
                found.append((int(key[6:]), value))
        return [layer for _, layer in sorted(found, key=lambda p: p[0])]

    def get_config(self) -> dict:
        """The layers' configs and the input shape the model was built for."""
        shapes = getattr(self, "_build_shapes", None)
        build = None
        if self._batch_input_shape is not None:
            build = list(self._batch_input_shape)
        elif shapes is not None and hasattr(shapes, "as_list"):
            build = [None, *shapes.as_list()[1:]]
        return {"name": self.name,
                "layers": [serialization.serialize(layer) for layer in self.layers],
                "build_input_shape": build}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Sequential":
        model = cls(name=config.get("name"))
        for spec in config.get("layers", []):
            model.add(serialization.deserialize(spec, custom_objects))
        if config.get("build_input_shape") is not None and not model.built:
            model.build(tuple(config["build_input_shape"]))
        return model

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Feeds ``inputs`` through every layer in order (``training`` goes to the layers
        whose ``call`` accepts it)."""
        outputs = inputs
        with name_scope(""):  # Keras builds them as a graph network: 'dense/kernel:0'
            for layer in self.layers:
                kwargs = {}
                if training is not None and _accepts(type(layer).call, "training"):
                    kwargs["training"] = training
                outputs = layer(outputs, **kwargs)
                if isinstance(outputs, Tensor):  # for summary(): Keras shows the batch as None
                    layer._summary_output_shape = (None, *outputs.shape.as_list()[1:])
        return outputs


@serialization.register
class FunctionalModel(Model):
    """A model built by the Functional API: ``keras.Model(inputs, outputs)``. Its layers are
    tracked as TensorFlow's Functional models track them (``layer_with_weights-k`` and
    ``layer-i``), so checkpoint keys match.

    >>> import stagecraft as tf
    >>> a, b = tf.keras.Input(shape=(2,)), tf.keras.Input(shape=(3,))
    >>> dense = tf.keras.layers.Dense(4)
    >>> merged = tf.keras.layers.Concatenate()([dense(a), tf.keras.layers.Dense(4)(b)])
    >>> model = tf.keras.Model([a, b], [merged, dense(a)])
    >>> [o.shape for o in model([tf.ones([5, 2]), tf.ones([5, 3])])]
    [TensorShape([5, 8]), TensorShape([5, 4])]
    """

    _TF_MODULE_IGNORED_PROPERTIES = Model._TF_MODULE_IGNORED_PROPERTIES | frozenset(
        ("_graph",))

    def __init__(self, inputs: Any, outputs: Any, name: str | None = None,
                 trainable: bool = True):
        # TF 2 Keras's default name (its summary() format is the one stagecraft prints)
        Layer.__init__(self, name=name or backend.unique_object_name("model"),
                       trainable=trainable)
        self._graph = Functional(inputs, outputs)
        self._graph.note_output_shapes()
        with_weights = 0
        for i, layer in enumerate(self._graph.layers()):
            if layer.weights:
                setattr(self, f"layer_with_weights-{with_weights}", layer)
                with_weights += 1
            setattr(self, f"layer-{i}", layer)
        self.built = True

    @property
    def layers(self) -> list[Layer]:
        """The input layers, then each layer once, in call order."""
        return self._graph.layers()

    @property
    def inputs(self) -> list:
        return structure.flatten(_tuples(self._graph.inputs))

    @property
    def outputs(self) -> list:
        return structure.flatten(_tuples(self._graph.outputs))

    def get_config(self) -> dict:
        """The layers' configs and the recorded calls that connect them
        (``functional.graph_config``)."""
        return {"name": self.name, **self._graph.config()}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "FunctionalModel":
        inputs, outputs = Functional.rebuild(config, custom_objects)
        return cls(inputs, outputs, name=config.get("name"))

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Replays the recorded layer calls on ``inputs``."""
        with name_scope(""):
            return self._graph.run(inputs, training)


load_model = saving.load_model
save_model = saving.save_model

__all__ = ["FunctionalModel", "Model", "Sequential", "load_model", "save_model"]
