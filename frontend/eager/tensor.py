"""``Tensor``: an immutable n-dimensional array with TensorFlow's API and operators."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from stagecraft.devices.device import GPU_DEVICE, list_devices
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape

CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"

# What tensors do through the modules built on this one, which register it when they are
# imported (this module imports none of them; ``import stagecraft`` imports them all):
#   "copy"          eager/placement.py       copy(tensor, device), for Tensor.gpu() / cpu()
#   "stack"         ops/array_ops.py         stack(tensors), for converting lists of tensors
#   "slice_method"  state/variable_slices.py slice_method(tensor, name), for v[k].assign(x)
LATE_BOUND: dict[str, Callable[..., Any]] = {}


class TensorOperators:
    """Python operators for tensor-like classes (Tensor, Variable): each maps to one op.

    The arithmetic and comparison operators call op wrappers, which are built on ``Tensor``;
    ``stagecraft.ops.operators`` installs them here (as TensorFlow's ``math_ops`` overrides
    ``Tensor``'s operators), so this module imports no op.
    """

    __slots__ = ()

    __hash__ = None  # == is elementwise; use .ref() as a key

    # Python conversions of an eager value (symbolic tensors override them with errors).
    _noun = "tensor"  # in messages

    def _host(self) -> Any:
        """The value as a host (NumPy) array or scalar; device tensors copy it."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._host())

    def __int__(self) -> int:
        return int(self._host())

    def __float__(self) -> float:
        return float(self._host())

    def __index__(self) -> int:
        v = self._host()
        if not (np.ndim(v) == 0 and v.dtype.kind in "iu"):
            raise TypeError(f"Only scalar integer tensors can be used as an index, got a "
                            f"{self.dtype.name} {self._noun} of shape {self.shape}.")
        return int(v)


class Tensor(TensorOperators):
    """An eager tensor: a value computed by an op, held in a NumPy buffer.

    Tensors are immutable; every op returns a new one. Python operators map to stagecraft ops
    (``==`` is elementwise, as in TensorFlow 2), and eager tensors convert to Python values with
    ``bool()``, ``int()``, ``float()`` and to NumPy with ``.numpy()`` or ``np.asarray``.

    >>> import stagecraft as tf
    >>> x = tf.constant([[1., 2.], [3., 4.]])
    >>> (x * 2 + 1)[1]
    <stagecraft.Tensor: shape=(2,), dtype=float32, numpy=array([7., 9.], dtype=float32)>
    """

    __slots__ = ("_value", "__weakref__")
    # Makes `ndarray + tensor` call Tensor.__radd__ (a tensor result) instead of NumPy's add.
    __array_priority__ = 100

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError("Tensors are created by ops; use stagecraft.constant(value) or "
                        "stagecraft.convert_to_tensor(value) to make one from data.")

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: `variable[key].assign(x)` finds the variable
        # the slice was read from (see state/variable_slices.py).
        if name in ("assign", "assign_add", "assign_sub") and "slice_method" in LATE_BOUND:
            method = LATE_BOUND["slice_method"](self, name)
            if method is not None:
                return method
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    # ------------------------------------------------------------------ properties
    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._value.dtype)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def device(self) -> str:
        return CPU_DEVICE

    @property
    def name(self) -> str:
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    def numpy(self) -> Any:
        """The value as a NumPy array (a NumPy scalar for 0-d tensors); may share memory."""
        v = self._value
        return v[()] if v.ndim == 0 else v

    def gpu(self, gpu_index: int = 0) -> "Tensor":
        """★ A copy of this tensor on GPU ``gpu_index`` (only GPU:0 exists in stagecraft);
        recorded by tapes, so gradients flow back through the copy. Without a GPU it raises
        InvalidArgumentError, whatever the soft-placement setting (it names a device
        explicitly).

        >>> import stagecraft as tf
        >>> x = tf.constant([1.0])
        >>> y = x.gpu() if tf.config.list_logical_devices("GPU") else x
        >>> (y * 2.0).numpy().tolist()  # on the GPU when there is one
        [2.0]
        """
        if gpu_index != 0:
            raise ValueError(f"Tensor.gpu({gpu_index!r}): stagecraft uses one GPU, GPU:0 "
                             f"(devices: {list_devices()}). Call .gpu().")
        return LATE_BOUND["copy"](self, GPU_DEVICE)

    def cpu(self) -> "Tensor":
        """★ A copy of this tensor on the CPU (this tensor itself if it is there already);
        differentiable like ``gpu()``.

        >>> import stagecraft as tf
        >>> tf.constant([1.0]).cpu().device
        '/job:localhost/replica:0/task:0/device:CPU:0'
        """
        return LATE_BOUND["copy"](self, CPU_DEVICE)

    def ref(self) -> "Reference":
        """A hashable reference to this tensor, for use as a dict key or set member."""
        return Reference(self)

    def experimental_ref(self) -> "Reference":
        return Reference(self)

    # ------------------------------------------------------- Python conversions
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.asarray(self._value)
        return a if dtype is None else a.astype(dtype)

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("Scalar tensor has no `len()`.")
        return self._value.shape[0]

    def __iter__(self) -> Iterator["Tensor"]:
        if self._value.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self) -> int:
        raise TypeError("Tensor is unhashable (== is elementwise). Use tensor.ref() as the key "
                        "instead.")

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0 and spec:
            return format(self._value[()], spec)
        return format(str(self), spec)

    def __copy__(self) -> "Tensor":
        return self

    def __deepcopy__(self, memo: dict) -> "Tensor":
        return self

    def __reduce__(self):
        return (_constant_from_numpy, (np.asarray(self._value),))

    # --------------------------------------------------------------- printing
    def __str__(self) -> str:
        return (f"stagecraft.Tensor({_numpy_text(self._value)}, shape={self.shape}, "
                f"dtype={self.dtype.name})")

    def __repr__(self) -> str:
        return (f"<stagecraft.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self._value, is_repr=True)}>")


def _numpy_text(value: Any, is_repr: bool = False) -> str:
    if np.ndim(value) == 0:
        return str(np.asarray(value)[()])  # "3.0", not NumPy 2's repr "np.float32(3.0)"
    text = repr(value) if is_repr else str(value)
    return "\n" + text if "\n" in text else text  # multi-line values start on a new line, as in TF


def _constant_from_numpy(value: np.ndarray) -> Tensor:
    return wrap(value)


_new = object.__new__


def wrap(value: Any) -> Tensor:
    """Makes an eager tensor around a NumPy array or scalar (no copy, no checks)."""
    t = _new(Tensor)
    t._value = value
    return t


class Reference:
    """A hashable handle to a tensor or variable, as returned by ``x.ref()``."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any):
        self._obj = obj

    def deref(self) -> Any:
        return self._obj

    def __hash__(self) -> int:
        return id(self._obj)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Reference) and other._obj is self._obj

    def __repr__(self) -> str:
        return f"<Reference to {self._obj!r}>"


newaxis = None
