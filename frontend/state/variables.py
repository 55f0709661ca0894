"""``Variable``: mutable state owned by Python, read as tensors and watched by tapes."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor, register_conversion
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape, as_dims, format_dims, is_compatible
from stagecraft.eager import placement as _placement
from stagecraft.eager.device_tensor import DeviceTensor, wrap_device
from stagecraft.eager.placement import to_device_array, to_host_array
from stagecraft.state.variable_slices import read_slice, scatter_nd
from stagecraft.eager.tensor import CPU_DEVICE, Reference, Tensor, TensorOperators, _numpy_text, wrap

_uids = itertools.count()
# Variables of other kinds register here: each function gets the constructor's arguments and
# returns the Variable subclass to create, or None (stagecraft.distribute's remote variables).
PLACED_VARIABLES: list = []

# The active name scope ("mlp/" inside `with module.name_scope:`), prefixed to variable names.


class Variable(TensorOperators):
    """A mutable tensor-valued variable.

    Ops read its current value (a tensor snapshot); ``assign``/``assign_add``/``assign_sub``
    replace the value, checking dtype and shape. Reads of a trainable variable inside a
    ``GradientTape`` are watched automatically.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> with tf.GradientTape() as tape:
    ...     y = v * v
    >>> float(tape.gradient(y, v))
    2.0
    >>> _ = v.assign_add(2.0); float(v)
    3.0
    """

    _noun = "variable"  # in the messages of the conversions TensorOperators defines

    # _value: a NumPy array, or a device array when _device is GPU_DEVICE (None: the CPU).
    __slots__ = ("_value", "_shape", "_trainable", "_name", "_uid", "_device", "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> "Variable":
        if cls is Variable:
            for pick in PLACED_VARIABLES:
                subclass = pick(*args, **kwargs)
                if subclass is not None:
                    return object.__new__(subclass)
        return object.__new__(cls)

    def __init__(self, initial_value: Any = None, trainable: bool | None = None,
                 validate_shape: bool = True, caching_device: Any = None,
                 name: str | None = None, variable_def: Any = None, dtype: Any = None,
                 import_scope: Any = None, constraint: Any = None, synchronization: Any = None,
                 aggregation: Any = None, shape: Any = None):
        if initial_value is None:
            raise ValueError("Variable: initial_value must be specified (a tensor, a value "
                             "convertible to one, or a zero-argument callable).")
        graph = STATE.get().graph
        if graph is not None:
            graph.on_variable_created(self)  # raises when the function may not create one
        if callable(initial_value) and not isinstance(initial_value, (Tensor, Variable)):
            initial_value = initial_value()
        if isinstance(initial_value, Variable):
            initial_value = initial_value.read_value()
        t = convert_to_tensor(initial_value, dtype)
        self._trainable = True if trainable is None else bool(trainable)
        self._name = STATE.get().name_scope + (name if name is not None else "Variable")
        self._uid = next(_uids)
        self._store_initial(t, graph, shape)

    def _store_initial(self, t: Tensor, graph: Any, shape: Any) -> None:
        """Sets ``_device``, ``_value`` and ``_shape`` from the initial value ``t`` (subclasses
        that keep the value elsewhere override it)."""
        self._device = _placement_of(t)
        if t._value is None:
            # The initial value depends on the arguments of the function being traced: the
            # function computes it with the first call's arguments (see staging/function.py).
            self._value = np.zeros([0 if d is None else d for d in t.shape.as_list()],
                                   t.dtype.np)
            graph.root().pending_inits.append((self, t))
        elif type(t) is DeviceTensor:
            # Device buffers are never written in place, so sharing the tensor's is safe.
            self._value = t._value if self._device is not None else to_host_array(t._value)
        else:
            self._value = np.array(t._value)  # own copy: variables never alias tensors
        self._shape = as_dims(self._value.shape) if shape is None else as_dims(shape)
        if not is_compatible(self._shape, self._value.shape):
            raise ValueError(f"Variable: initial value of shape {list(self._value.shape)} does "
                             f"not match shape={format_dims(self._shape)}.")
        if self._device is not None and not _placement.memory().is_device_array(self._value):
            self._value = to_device_array(self._value)

    # ----------------------------------------------------------------- properties
    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._value.dtype)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def device(self) -> str:
        """Where the variable's buffer lives (its ops run there)."""
        return CPU_DEVICE if self._device is None else self._device

    # -------------------------------------------------------------------- reading
    def read_value(self) -> Tensor:
        """The current value as a tensor (recorded by active tapes)."""
        state = STATE.get()
        if state.graph is not None:
            t = state.graph.read_variable(self)
        elif self._device is None:
            t = wrap(self._value)
        else:
            t = wrap_device(self._value)
        for tape in state.tapes:
            tape.record_read(self, t)
        return t

    value = read_value

    def numpy(self) -> Any:
        v = self._host()
        return v[()] if v.ndim == 0 else v.copy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.array(self._host())
        return a if dtype is None else a.astype(dtype)

    def _host(self) -> np.ndarray:
        """The value as a NumPy array (the buffer itself on the CPU: do not write to it)."""
        return self._value if self._device is None else to_host_array(self._value)

    def __hash__(self) -> int:
        raise TypeError("Variable is unhashable (== is elementwise). Use variable.ref() as the "
                        "key instead.")

    def ref(self) -> Reference:
        return Reference(self)

    experimental_ref = ref

    # -------------------------------------------------------------------- writing
    def _checked(self, value: Any, what: str) -> np.ndarray:
        t = convert_to_tensor(value, self.dtype)
        if not is_compatible(self._shape, t._value.shape):
            raise ValueError(f"Cannot {what} variable '{self.name}': Shape mismatch. The "
                             f"variable shape {self.shape}, and the assigned value shape "
                             f"{t.shape} are incompatible. Reshape the value, or create the "
                             f"variable with shape=tf.TensorShape(None) to allow any shape.")
        return t._value

    def _store(self, value: Any) -> None:
        """Makes ``value`` (a NumPy or device array) the new buffer, on the variable's device."""
        if self._device is None:
            self._value = np.array(to_host_array(value), dtype=self.dtype.np)
        else:
            self._value = to_device_array(value)

    def _update(self, delta: Any, op: str, what: str) -> None:
        d = self._checked(delta, what)
        if self._device is None:
            fn = np.add if op == "add" else np.subtract
            self._value = np.asarray(fn(self._value, to_host_array(d)), dtype=self._value.dtype)
        else:
            self._value = gpu_kernel(op, [self._value, to_device_array(d)])

    def assign(self, value: Any, use_locking: Any = None, name: Any = None,
               read_value: bool = True) -> "Variable | None":
        """Replaces the value (same dtype, compatible shape); returns the variable, or None
        with ``read_value=False``. Not differentiable with respect to ``value``."""
        graph = STATE.get().graph
        if graph is not None:
            graph.assign_variable(self, value, "assign")
        else:
            self._store(self._checked(value, "assign value to"))
        return self if read_value else None

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> "Variable | None":
        """Adds ``delta`` to the value in place of the variable."""
        graph = STATE.get().graph
        if graph is not None:
            graph.assign_variable(self, delta, "add")
        else:
            self._update(delta, "add", "add to")
        return self if read_value else None

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> "Variable | None":
        """Subtracts ``delta`` from the value of the variable."""
        graph = STATE.get().graph
        if graph is not None:
            graph.assign_variable(self, delta, "sub")
        else:
            self._update(delta, "subtract", "subtract from")
        return self if read_value else None

    # ------------------------------------------------------------ partial updates
    def __getitem__(self, key: Any) -> Tensor:
        """``v[key]``: the slice's value, whose ``assign`` writes into the variable."""
        return read_slice(self, key)

    def scatter_nd_update(self, indices: Any, updates: Any, name: str | None = None) -> "Variable":
        """Writes ``updates`` at ``indices`` (each row of the last axis a position among the
        leading dims); returns the variable.

        >>> import stagecraft as tf
        >>> v = tf.Variable([1, 2, 3, 4])
        >>> v.scatter_nd_update([[0], [3]], [9, 10]).numpy().tolist()
        [9, 2, 3, 10]
        """
        return self._scatter_nd(indices, updates, "update")

    def scatter_nd_add(self, indices: Any, updates: Any, name: str | None = None) -> "Variable":
        """Adds ``updates`` at ``indices`` (repeated indices add up).

        >>> import stagecraft as tf
        >>> tf.Variable([1, 2]).scatter_nd_add([[1], [1]], [5, 5]).numpy().tolist()
        [1, 12]
        """
        return self._scatter_nd(indices, updates, "add")

    def scatter_nd_sub(self, indices: Any, updates: Any, name: str | None = None) -> "Variable":
        """Subtracts ``updates`` at ``indices``.

        >>> import stagecraft as tf
        >>> tf.Variable([[1, 2], [3, 4]]).scatter_nd_sub([[1]], [[3, 3]]).numpy().tolist()
        [[1, 2], [0, 1]]
        """
        return self._scatter_nd(indices, updates, "sub")

    def _scatter_nd(self, indices: Any, updates: Any, mode: str) -> "Variable":
        return scatter_nd(self, indices, updates, mode)

    # ------------------------------------------------------------------- printing
    def __repr__(self) -> str:
        return (f"<stagecraft.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self._host(), is_repr=True)}>")

    def __str__(self) -> str:
        return repr(self)

    def __deepcopy__(self, memo: dict) -> "Variable":
        copy = Variable(np.array(self._host()), trainable=self._trainable)
        copy._name = self._name
        if self._device is not None:
            copy._device, copy._value = self._device, to_device_array(copy._value)
        return copy


def _convert_variable(v: Variable, dtype: _dt.DType | None) -> Tensor:
    if dtype is not None and dtype != v.dtype:
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for variable "
                         f"'{v.name}' of dtype {v.dtype.name}. Use tf.cast(v, tf.{dtype.name}).")
    return v.read_value()


register_conversion(Variable, _convert_variable)


def _placement_of(initial: Tensor) -> str | None:
    """The device of a new variable: the ``device`` scope's when it names one (soft placement
    applies), else its initial value's; None means the CPU."""
    state = STATE.get()
    if state.place is not None:
        target = _placement.resolve(state.device, "a new variable")
    elif state.device is not None and state.device.device_type is not None:
        target = CPU_DEVICE
    else:
        target = _placement.device_of(initial)
    return None if target == CPU_DEVICE else target


def gpu_kernel(name: str, values: list) -> Any:
    """Runs the GPU kernel of op ``name`` on device arrays (variable updates)."""
    return _placement.kernels().run(name, values, {})
