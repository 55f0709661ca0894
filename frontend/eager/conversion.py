"""Turning Python and NumPy values into tensors with TensorFlow's dtype rules."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.ir import dtypes as _dt
from stagecraft.ir.dtypes import DType
from stagecraft.eager.context import STATE
from stagecraft.eager import placement
from stagecraft.eager.tensor import LATE_BOUND, Tensor, wrap

# Objects that convert themselves (Variables): type -> fn(obj, dtype) -> Tensor.
CONVERTERS: dict[type, Any] = {}


def register_conversion(cls: type, fn: Any) -> None:
    """Lets instances of ``cls`` be passed wherever a tensor is expected."""
    CONVERTERS[cls] = fn


def _natural_array(value: Any, to_float: bool = False, to_int: bool = False) -> np.ndarray:
    """A Python scalar or (nested) list as an array with TensorFlow's default dtypes
    (``to_float``: a float dtype was asked for, so ints beyond 64 bits are fine; ``to_int``:
    an integer dtype was asked for, whose own range check follows, e.g. uint64's)."""
    try:
        arr = np.array(value)
    except ValueError:
        raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: "
                         f"{_short(value)}. All rows must have the same length.") from None
    if arr.dtype == object:
        if _contains_tensor(value):
            return None  # packed by the caller
        if to_float and _first_leaf(value, _unsupported) is _NOT_FOUND:
            try:
                arr = np.array(value, dtype=np.float64)  # e.g. tf.constant(2**64, tf.float32)
            except (ValueError, TypeError):
                _explain_object_array(value)
        else:
            _explain_object_array(value)
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(np.float32)
    if kind in "iu" and not to_int:
        if arr.size and (arr.min() < -2**31 or arr.max() > 2**31 - 1):
            if arr.min() < -2**63 or arr.max() > 2**63 - 1:
                raise ValueError(f"Can't convert Python int {_short(value)} to a tensor: it does "
                                 f"not fit in int64.")
            return arr.astype(np.int64)
        return arr.astype(np.int32)
    if kind in "iu" or kind == "b":
        return arr
    if kind == "c":  # Python complex numbers are complex128 in TensorFlow
        return arr.astype(np.complex128)
    if kind in "USO":
        raise TypeError(f"Can't convert {_short(value)} to a tensor: stagecraft tensors hold "
                        f"numbers and bools, not {type(value).__name__} values of strings.")
    raise TypeError(f"Can't convert {_short(value)} (NumPy dtype {arr.dtype}) to a tensor.")


def _explain_object_array(value: Any) -> None:
    """Raises the error that says why NumPy could only make an object array of ``value``: an
    element of an unsupported type (None, a generator, ...), an int beyond 64 bits, or rows of
    different lengths (TensorFlow's messages where it has them)."""
    bad = _first_leaf(value, _unsupported)
    if bad is not _NOT_FOUND:
        what = "a value" if bad is value else f"an element of {_short(value)}"
        raise ValueError(f"Attempt to convert a value ({_short(bad)}) with an unsupported type "
                         f"({type(bad)}) to a Tensor: {what} is neither a number, a bool nor a "
                         f"(nested) list or tuple of them."
                         + (" Materialize the generator first: tf.constant(list(gen))."
                            if hasattr(bad, "__next__") else ""))
    big = _first_leaf(value, _huge_int)
    if big is not _NOT_FOUND:
        raise ValueError(f"Can't convert Python sequence with out-of-range integer to int64 "
                         f"Tensor: {_short(big)} is outside [-2**63, 2**63 - 1]"
                         + (" and [0, 2**64 - 1] (uint64)." if big > 0 else ".")
                         + " Use a float (tf.constant(float(x))) if an approximation will do.")
    raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: "
                     f"{_short(value)}. All rows must have the same length.")


_NOT_FOUND = object()  # _first_leaf's "nothing found" (None itself may be the culprit)


def _first_leaf(value: Any, pick: Callable[[Any], bool]) -> Any:
    """The first leaf of nested lists/tuples ``value`` for which ``pick`` holds, else
    ``_NOT_FOUND``."""
    if isinstance(value, (list, tuple)):
        for v in value:
            found = _first_leaf(v, pick)
            if found is not _NOT_FOUND:
                return found
        return _NOT_FOUND
    return value if pick(value) else _NOT_FOUND


def _unsupported(leaf: Any) -> bool:
    """Not a number, bool, string, array or tensor."""
    return not (isinstance(leaf, (bool, int, float, complex, str, bytes, np.generic, np.ndarray))
                or isinstance(leaf, Tensor) or type(leaf) in CONVERTERS)


def _huge_int(leaf: Any) -> bool:
    """A Python int outside int64's range."""
    return isinstance(leaf, int) and not isinstance(leaf, bool) and \
        not -2**63 <= leaf <= 2**63 - 1


def _contains_tensor(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return isinstance(value, Tensor) or type(value) in CONVERTERS


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _cast_python(arr: np.ndarray, value: Any, dtype: DType) -> np.ndarray:
    """Casts converted Python data to ``dtype``, refusing lossy conversions like TensorFlow."""
    if arr.dtype == dtype.np:
        return arr
    kind = "f" if arr.dtype == _dt.bfloat16.np else arr.dtype.kind  # (ml_dtypes' kind: 'V')
    if kind == "c" and not dtype.is_complex:
        raise TypeError(f"Cannot convert {_short(value)} to EagerTensor of dtype {dtype.name}: "
                        f"it is complex. Use tf.math.real(x) or tf.abs(x) for a real value, or "
                        f"a complex dtype.")
    if dtype.is_integer:
        if kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.trunc(arr)):
                raise TypeError(f"Cannot convert {_short(value)} to EagerTensor of dtype "
                                f"{dtype.name}: it is not an integer. Round it first or use "
                                f"a float dtype.")
        info = np.iinfo(dtype.np)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise TypeError(f"Cannot convert {_short(value)} to EagerTensor of dtype "
                            f"{dtype.name}: out of range [{info.min}, {info.max}].")
    elif dtype.is_bool and kind != "b":
        raise TypeError(f"Cannot convert {_short(value)} to EagerTensor of dtype bool.")
    return arr.astype(dtype.np)


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None,
                      name: str | None = None) -> Tensor:
    """Converts a tensor, variable, NumPy array, Python scalar or nested list to a tensor.

    Python floats become float32 and ints int32 (int64 when they do not fit); NumPy arrays keep
    their dtype. With ``dtype``, Python data is converted to it (lossy conversions raise
    TypeError) and a tensor of another dtype raises ValueError. While a function is being
    traced, new data becomes a constant of the graph.

    >>> import stagecraft as tf
    >>> tf.convert_to_tensor([1, 2]).dtype, tf.convert_to_tensor(1.5).dtype
    (stagecraft.int32, stagecraft.float32)
    """
    t = to_eager(value, dtype, dtype_hint)
    if t is value or t._value is None:
        return t
    graph = STATE.get().graph
    return t if graph is None else graph.constant(t)


def to_eager(value: Any, dtype: Any = None, dtype_hint: Any = None) -> Tensor:
    """``convert_to_tensor`` without the graph: new data always becomes an eager tensor."""
    if isinstance(value, Tensor):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {_dt.as_dtype(dtype).name} for "
                             f"Tensor with dtype {value.dtype.name}: {value!r}. Use "
                             f"tf.cast(x, tf.{_dt.as_dtype(dtype).name}) to change its dtype.")
        return value
    conv = CONVERTERS.get(type(value))
    if conv is not None:
        return conv(value, None if dtype is None else _dt.as_dtype(dtype))
    if dtype is None and dtype_hint is not None:
        try:
            return to_eager(value, dtype_hint)
        except (TypeError, ValueError):
            return to_eager(value)
    target = None if dtype is None else _dt.as_dtype(dtype)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic) and not isinstance(
            value, (np.str_, np.bytes_)):
        arr = np.asarray(value)
        if arr.dtype.kind in "USO":
            raise TypeError(f"Can't convert a NumPy array of dtype {arr.dtype} to a tensor.")
        if target is None:
            _dt.from_numpy(arr.dtype)  # raises for dtypes stagecraft lacks (float16)
            return wrap(arr.copy() if isinstance(value, np.ndarray) else arr)
        return wrap(_cast_python(arr, value, target))
    if hasattr(value, "__array__") and not isinstance(value, (list, tuple)):
        return to_eager(np.asarray(value), dtype)
    arr = _natural_array(value, to_float=target is not None and target.is_floating,
                         to_int=target is not None and target.is_integer)
    if arr is None:  # a list holding tensors: pack them like tf.stack
        return LATE_BOUND["stack"]([convert_to_tensor(v, target) for v in value])
    if target is not None:
        arr = _cast_python(np.array(value) if arr.dtype.kind != "b" else arr, value, target)
    return wrap(arr)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const") -> Tensor:
    """Creates a tensor from a Python or NumPy value (copied).

    With ``shape``, a scalar is broadcast to it and other values are reshaped to it. Under a
    ``tf.device`` scope the constant is created on that device (the CPU when soft placement
    finds no GPU).

    >>> import stagecraft as tf
    >>> tf.constant(0., shape=[2, 2]).numpy().tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    if isinstance(value, Tensor) and dtype is not None and _dt.as_dtype(dtype) != value.dtype:
        raise TypeError(f"constant: the value is a {value.dtype.name} tensor but dtype="
                        f"{_dt.as_dtype(dtype).name} was requested; use tf.cast instead.")
    t = to_eager(value, dtype)
    if t._value is None:
        raise TypeError(f"constant: {value!r} is a symbolic tensor; constants are made from "
                        f"Python or NumPy data. Use tf.identity or tf.reshape instead.")
    if shape is not None:
        dims = tuple(int(d) for d in shape)
        v = t._value
        if v.size == 1 and v.shape != dims:
            t = wrap(np.full(dims, v.reshape(()), dtype=v.dtype))
        elif v.size != int(np.prod(dims)):
            raise TypeError(f"constant: expected a value with {int(np.prod(dims))} elements "
                            f"for shape {list(dims)}, got {v.size}.")
        else:
            t = wrap(v.reshape(dims))
    state = STATE.get()
    if state.graph is not None:
        return t if isinstance(value, Tensor) and t is value else state.graph.constant(t)
    if state.place is not None and t is not value:
        # Like TensorFlow's eager constants: created on the scope's device (soft placement
        # rules included), so later ops on it need no copy.
        t = placement.copy(t, placement.resolve(state.device, "tf.constant"))
    return t


__all__ = ["constant", "convert_to_tensor", "register_conversion"]
