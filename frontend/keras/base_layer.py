"""``keras.layers.Layer``: a ``Module`` that creates its weights lazily, on its first call.

A layer's ``__call__`` converts NumPy/Python inputs to tensors, casts floating inputs to the
layer's dtype (Keras's autocasting), calls ``build(input_shape)`` once (in the layer's name
scope), then ``call``. Weights are variables held in attributes (``self.kernel``), so
``tf.train.Checkpoint`` names them by attribute; ``weights``/``variables`` list them in Keras's
order: the layer's own weights in creation order, then each sub-layer's, in the order they
were assigned. Inside ``@tf.function`` the build runs on the first trace only (the layer is
built afterwards), which is the variable-creation contract of ``tf.function``; calling a
built layer never creates variables. While tracing, a user-defined ``call`` is converted by
AutoGraph (as Keras does), so Python ``if``/``for`` on tensors inside it are staged.
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
import re
from typing import Any, Iterator

import numpy as np

from stagecraft.ops import math_ops as _m
from stagecraft.eager import nest
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.keras import (backend, call_context, constraints, initializers, regularizers,
                              serialization)
from stagecraft.keras.input_spec import assert_input_compatibility
from stagecraft.state.module import Module
from stagecraft.eager.scopes import init_scope, name_scope
from stagecraft.eager.tensor import Tensor
from stagecraft.state.variables import Variable


#: Attributes whose variables are not the layer's weights (they stay in its checkpoints).
_NOT_WEIGHT_SOURCES = frozenset(("optimizer",))

#: How many layer calls enclose the current one: the outermost call clears the losses
#: that ``add_loss`` collected in the previous call, as Keras does.
_CALL_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("keras_call_depth", default=0)


class _WeightList:
    """The weights ``add_weight`` made, in creation order. Deliberately not a list: module
    reflection and checkpoints treat it as an opaque value, so a weight is found once, under
    the attribute it is assigned to (``kernel``), never under a bookkeeping name."""

    __slots__ = ("items", "regularizers")

    def __init__(self) -> None:
        self.items: list[Variable] = []
        # (weight, regularizer) pairs: each penalty is computed afresh when `losses` is read.
        self.regularizers: list[tuple[Variable, Any]] = []


class Layer(Module):
    """Base class of Keras layers: override ``build(input_shape)`` to create weights with
    ``add_weight`` and ``call(inputs)`` to compute the outputs.

    ``trainable=False`` freezes the layer (its weights move to ``non_trainable_weights``);
    ``dtype`` is the dtype of its weights and computations (default ``keras.backend.floatx()``,
    float32). ``input_shape=`` (without the batch dimension) lets a ``Sequential`` model
    create its weights at construction.

    >>> import stagecraft as tf
    >>> class Scale(tf.keras.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", shape=[input_shape[-1]], initializer="ones")
    ...     def call(self, inputs):
    ...         return inputs * self.w
    >>> layer = Scale()
    >>> layer.built
    False
    >>> layer(tf.constant([[1., 2.]])).numpy().tolist()
    [[1.0, 2.0]]
    >>> layer.built, [w.shape for w in layer.weights]
    (True, [TensorShape([2])])
    """

    # Bookkeeping attributes that module reflection must not walk.
    _TF_MODULE_IGNORED_PROPERTIES = Module._TF_MODULE_IGNORED_PROPERTIES | frozenset(
        ("_layer_weights", "_batch_input_shape", "_building_from_call", "_summary_output_shape",
         "_build_shapes", "_call_losses", "_activity_regularizer"))

    _building_from_call = False

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 **kwargs: Any):
        allowed = {"input_shape", "batch_input_shape", "input_dim", "batch_size",
                   "activity_regularizer"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}. Layers accept trainable, name, dtype, "
                            f"input_shape, batch_input_shape, input_dim, batch_size and "
                            f"activity_regularizer.")
        if name is None:
            name = backend.unique_object_name(_keras_snake(type(self).__name__))
        super().__init__(name=name)
        self._trainable = bool(trainable)
        self._dtype = _dt.as_dtype(backend.floatx() if dtype is None else dtype)
        self._layer_weights = _WeightList()
        self._activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._batch_input_shape = _batch_input_shape(kwargs)
        self.built = False

    # ------------------------------------------------------------------- properties
    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights, as a name (``'float32'``), like Keras."""
        return self._dtype.name

    @property
    def trainable(self) -> bool:
        """False freezes the layer: its weights are listed as non-trainable."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        # As in TensorFlow 2, the value goes to every sub-layer too: a frozen model's
        # BatchNormalization layers then run in inference mode.
        for layer in self._layers_below():
            layer._trainable = bool(value)

    def _layers_below(self) -> Iterator["Layer"]:
        """This layer and every layer inside it, each once, breadth first (Keras's order)."""
        queue: list[Layer] = [self]
        seen: set[int] = set()
        while queue:
            layer = queue.pop(0)
            if id(layer) not in seen:
                seen.add(id(layer))
                yield layer
                queue.extend(c for c in layer._children() if isinstance(c, Layer))

    # --------------------------------------------------------------------- calling
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Builds the layer on the first call, then returns ``self.call(inputs, ...)``. On
        the Functional API's symbolic inputs, the call is recorded instead."""
        self._check_initialized()
        symbolic = next((x for x in nest.flatten(inputs)
                         if hasattr(type(x), "_record_layer_call")), None)
        if symbolic is not None:
            if args:
                raise TypeError(f"{self.name}: on Functional API inputs, pass a layer's extra "
                                f"arguments by keyword (e.g. training=True).")
            return type(symbolic)._record_layer_call(self, inputs, kwargs)
        if isinstance(inputs, (list, tuple)) and inputs and \
                all(_is_python_number(x) for x in nest.flatten(inputs)):
            inputs = convert_to_tensor(inputs)  # `model([[1., 2.]])`: one tensor, not many
        inputs = nest.map_structure(self._convert_input, inputs)
        spec = vars(self).get("input_spec")
        if spec is not None:  # a layer's declared InputSpec, checked as Keras does
            assert_input_compatibility(spec, inputs, self.name)
        training = kwargs.get("training")
        if training is None:  # Keras's call context: the enclosing call's mode, if any
            training = call_context.training()
            if training is not None and _accepts(type(self).call, "training"):
                kwargs["training"] = training
        for optional in ("training", "mask"):
            # Keras passes these only to a `call` that declares them.
            if optional in kwargs and not _accepts(type(self).call, optional):
                del kwargs[optional]
        if _CALL_DEPTH.get() == 0:
            self._clear_losses()
        # Keras nests the scope where the layer is called: a model's layers build their
        # weights as 'my_model/dense/kernel:0'.
        with name_scope(STATE.get().name_scope + self.name + "/"), \
                call_context.training_scope(training), _nested_call():
            if not self.built:
                self._maybe_build(inputs)
            if STATE.get().graph is not None and _is_user_code(type(self).call):
                # As Keras does: convert the user's `call` with AutoGraph while tracing, so its
                # Python control flow on tensors is staged (the layer object itself is not a
                # function that AutoGraph's call conversion would descend into).
                from stagecraft.converters.operators.calls import converted_call
                outputs = converted_call(self.call, (inputs,) + args, kwargs)
            else:
                outputs = self.call(inputs, *args, **kwargs)
            if self._activity_regularizer is not None:  # Keras: a penalty on the outputs
                for out in nest.flatten(outputs):
                    if isinstance(out, Tensor):
                        self.add_loss(self._activity_regularizer(out))
            return outputs

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation; the base class returns ``inputs`` unchanged."""
        return inputs

    def build(self, input_shape: Any) -> None:
        """Creates the weights, given the shape of the first inputs (a ``TensorShape``, or a
        structure of them for several inputs). The base class creates none."""
        self.built = True

    def _maybe_build(self, inputs: Any) -> None:
        shapes = nest.map_structure(
            lambda t: t.shape if isinstance(t, Tensor) else None, inputs)
        self._build_shapes = shapes  # a saved model's config records them
        self._building_from_call = True
        try:
            self.build(shapes)  # in the call's name scope
        finally:
            self._building_from_call = False
        self.built = True

    def _convert_input(self, x: Any) -> Any:
        """NumPy arrays, Python numbers and variables become tensors; floating inputs are cast
        to the layer's dtype (Keras's autocasting, so a float64 array feeds a float32 layer)."""
        if isinstance(x, (np.ndarray, np.generic, float, int, Variable)) and \
                not isinstance(x, bool):
            x = convert_to_tensor(x)
        if isinstance(x, Tensor) and x.dtype.is_floating and x.dtype != self._dtype:
            x = _m.cast(x, self._dtype)
        return x

    def _check_initialized(self) -> None:
        if "_layer_weights" not in vars(self):
            raise RuntimeError(
                f"It looks like you are subclassing `{type(self).__name__}` and you forgot to "
                f"call `super().__init__()`. Always start your `__init__` with this line.")

    # ---------------------------------------------------------------------- losses
    def add_loss(self, loss: Any) -> None:
        """Adds a loss term (a scalar tensor, e.g. an activity penalty computed in ``call``)
        that ``model.losses`` lists and ``fit`` adds to the compiled loss. Losses added
        during a call replace those of the previous outermost call.

        >>> import stagecraft as tf
        >>> class Penalized(tf.keras.layers.Layer):
        ...     def call(self, x):
        ...         self.add_loss(tf.reduce_sum(x))
        ...         return x
        >>> layer = Penalized()
        >>> _ = layer(tf.ones([2])); [float(v) for v in layer.losses]
        [2.0]
        """
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        vars(self).setdefault("_call_losses", []).append(convert_to_tensor(loss))

    @property
    def losses(self) -> list[Tensor]:
        """The losses ``add_loss`` added during the last call and the weight regularizers'
        penalties (computed now, so on a tape they differentiate), this layer's then its
        sub-layers'."""
        out: list[Tensor] = []
        for layer in self._layers_below():
            out += vars(layer).get("_call_losses", [])
            out += [reg(var) for var, reg in layer._layer_weights.regularizers]
        return out

    def _clear_losses(self) -> None:
        for layer in self._layers_below():
            if vars(layer).get("_call_losses"):
                vars(layer)["_call_losses"] = []

    # --------------------------------------------------------------------- weights
    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, *,
                   trainable: bool | None = None, constraint: Any = None) -> Variable:
        """Creates a weight variable of ``shape`` (default scalar) and ``dtype`` (default the
        layer's), initialized by ``initializer`` (a name, an initializer object or a callable;
        default ``'glorot_uniform'`` for floats, ``'zeros'`` otherwise). Assign the result to
        an attribute (``self.kernel = self.add_weight('kernel', ...)``): the attribute name is
        the weight's checkpoint name. ``regularizer`` (a ``keras.regularizers`` name or
        callable) adds its penalty of the weight to ``losses``; ``constraint`` (a
        ``keras.constraints`` one) projects the weight after each optimizer update.

        The initial value is computed eagerly even while a function is being traced (lifted
        out of the graph, like TensorFlow's initializers); the variable itself is created in
        the trace, so ``tf.function``'s creation rules apply to it.

        >>> import stagecraft as tf
        >>> layer = tf.keras.layers.Layer()
        >>> layer.add_weight("w", shape=[2], initializer="zeros").numpy().tolist()
        [0.0, 0.0]
        """
        self._check_initialized()
        d = self._dtype if dtype is None else _dt.as_dtype(dtype)
        if initializer is None:
            initializer = "glorot_uniform" if d.is_floating else "zeros"
        init = initializers.get(initializer)
        dims = tuple(TensorShape(() if shape is None else shape).as_list())
        if None in dims:
            raise ValueError(f"add_weight: weight {name!r} of layer {self.name!r} needs a fully "
                             f"known shape, got {list(dims)}.")
        serialization.charge(f"{self.name}/{name}", dims)
        with init_scope():
            value = convert_to_tensor(init(dims, dtype=d), d)
        # Built from a call, the call's scope holds; made elsewhere, the layer's own.
        with contextlib.nullcontext() if self._building_from_call else self.name_scope:
            var = Variable(value, trainable=True if trainable is None else bool(trainable),
                           name=name, dtype=d)
        self._layer_weights.items.append(var)
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            self._layer_weights.regularizers.append((var, regularizer))
        constraint = constraints.get(constraint)
        if constraint is not None:
            constraints.attach(var, constraint)
        return var

    # --------------------------------------------------------------------- configs
    def get_config(self) -> dict:
        """The constructor arguments that recreate this layer (without its weights):
        ``type(layer).from_config(layer.get_config())``.

        >>> import stagecraft as tf
        >>> tf.keras.layers.Dense(3, name="d").get_config()["units"]
        3
        """
        config: dict[str, Any] = {"name": self.name, "trainable": self._trainable,
                                  "dtype": self._dtype.name}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        if self._activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self._activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        """A new layer from ``get_config``'s output."""
        return cls(**config)

    def _own_weights(self) -> list[Variable]:
        """This layer's variables (not its sub-layers'): ``add_weight``'s in creation order,
        then variables assigned directly to attributes, in assignment order."""
        out = list(self._layer_weights.items)
        seen = {id(v) for v in out}
        for key, value in vars(self).items():
            if key in self._TF_MODULE_IGNORED_PROPERTIES:
                continue
            for leaf in nest.flatten(value):
                if isinstance(leaf, Variable) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    out.append(leaf)
        return out

    def _children(self) -> Iterator[Module]:
        """Direct sub-modules (layers included) in attribute assignment order; a compiled
        model's optimizer is checkpointed with it but its variables are not the model's."""
        seen: set[int] = set()
        for key, value in vars(self).items():
            if key in self._TF_MODULE_IGNORED_PROPERTIES or key in _NOT_WEIGHT_SOURCES:
                continue
            for leaf in nest.flatten(value):
                if isinstance(leaf, Module) and leaf is not self and id(leaf) not in seen:
                    seen.add(id(leaf))
                    yield leaf

    def _gather(self, want_trainable: bool, seen: set[int]) -> list[Variable]:
        out: list[Variable] = []
        if id(self) in seen:  # a layer shared twice (or a cycle) is listed once
            return out
        seen.add(id(self))
        frozen = not self._trainable
        for v in self._own_weights():
            if (v.trainable and not frozen) == want_trainable:
                out.append(v)
        for child in self._children():
            if isinstance(child, Layer):
                if frozen and not want_trainable:
                    out += child._gather(True, set(seen)) + child._gather(False, seen)
                elif not frozen:
                    out += child._gather(want_trainable, seen)
            else:  # a plain tf.Module inside a layer: its variables by its own rules
                out += [v for v in child.variables
                        if (v.trainable and not frozen) == want_trainable]
        return out

    @property
    def trainable_weights(self) -> list[Variable]:
        """Trainable weights: this layer's (creation order), then its sub-layers'."""
        return _unique(self._gather(True, set()))

    @property
    def non_trainable_weights(self) -> list[Variable]:
        """Non-trainable weights (all weights of a frozen layer)."""
        return _unique(self._gather(False, set()))

    @property
    def weights(self) -> list[Variable]:
        """``trainable_weights + non_trainable_weights``."""
        return _unique(self.trainable_weights + self.non_trainable_weights)

    @property
    def variables(self) -> tuple:  # type: ignore[override]
        """The weights, as a tuple, in Keras's order (``weights``)."""
        return tuple(self.weights)

    @property
    def trainable_variables(self) -> tuple:  # type: ignore[override]
        """The trainable weights, as a tuple (what to differentiate and optimize)."""
        return tuple(self.trainable_weights)

    @property
    def non_trainable_variables(self) -> tuple:  # type: ignore[override]
        """The non-trainable weights, as a tuple."""
        return tuple(self.non_trainable_weights)

    def count_params(self) -> int:
        """The number of scalars in the layer's weights (trainable or not); the layer must
        be built.

        >>> import stagecraft as tf
        >>> layer = tf.keras.layers.Dense(3)
        >>> layer.build((None, 4))
        >>> layer.count_params()
        15
        """
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name!r}, but the "
                             f"layer isn't built. Call it on inputs first (or call build()).")
        return sum(int(np.prod(w.shape.as_list())) for w in self.weights)

    def get_weights(self) -> list[np.ndarray]:
        """The values of ``weights`` as NumPy arrays.

        >>> import stagecraft as tf
        >>> layer = tf.keras.layers.Dense(1, kernel_initializer="ones")
        >>> _ = layer(tf.ones([1, 2])); [w.tolist() for w in layer.get_weights()]
        [[[1.0], [1.0]], [0.0]]
        """
        return [np.array(v.numpy()) for v in self.weights]

    def set_weights(self, weights: list[Any]) -> None:
        """Assigns ``weights`` (in the order of ``get_weights``) to the layer's weights."""
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"set_weights: layer {self.name!r} has {len(mine)} weight(s) but "
                             f"{len(weights)} value(s) were given. Pass one array per weight, "
                             f"in the order of layer.weights (build the layer first).")
        for var, value in zip(mine, weights):
            if tuple(np.shape(value)) != tuple(var.shape.as_list()):
                raise ValueError(f"set_weights: weight {var.name} of layer {self.name!r} has "
                                 f"shape {tuple(var.shape.as_list())}, the value has shape "
                                 f"{tuple(np.shape(value))}.")
            var.assign(np.asarray(value, var.dtype.np))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} built={self.built}>"


def _keras_snake(name: str) -> str:
    """Keras's default layer names (``to_snake_case``): ``Conv2D`` -> ``conv2d``,
    ``SpatialDropout1D`` -> ``spatial_dropout1d``, ``PReLU`` -> ``p_re_lu`` (tf.Module's rule
    would give ``conv2_d``).

    >>> _keras_snake("Conv2DTranspose"), _keras_snake("GRUCell"), _keras_snake("ReLU")
    ('conv2d_transpose', 'gru_cell', 're_lu')
    """
    intermediate = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake.lstrip("_") if snake.startswith("_") else snake


@contextlib.contextmanager
def _nested_call() -> Iterator[None]:
    token = _CALL_DEPTH.set(_CALL_DEPTH.get() + 1)
    try:
        yield
    finally:
        _CALL_DEPTH.reset(token)


def _unique(vs: list[Variable]) -> list[Variable]:
    seen: set[int] = set()
    out = []
    for v in vs:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _batch_input_shape(kwargs: dict) -> tuple | None:
    """Keras's ``input_shape``/``input_dim``/``batch_input_shape`` arguments as one shape
    with the batch dimension first (None unless ``batch_size`` is given)."""
    if kwargs.get("batch_input_shape") is not None:
        return tuple(kwargs["batch_input_shape"])
    shape = kwargs.get("input_shape")
    if shape is None and kwargs.get("input_dim") is not None:
        shape = (kwargs["input_dim"],)
    if shape is None:
        return None
    return (kwargs.get("batch_size"),) + tuple(shape)


_ACCEPTS: dict[tuple[Any, str], bool] = {}


def _accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes an argument ``name`` (or ``**kwargs``); cached per function."""
    key = (fn, name)
    try:
        return _ACCEPTS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable callable: look it up every time
        key = None
    try:
        params = inspect.signature(fn).parameters
        found = name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):
        found = True  # cannot tell: pass the argument on
    if key is not None:
        _ACCEPTS[key] = found
    return found


def _is_python_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_user_code(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return not module.startswith("stagecraft") and inspect.isfunction(fn)


__all__ = ["Layer"]
