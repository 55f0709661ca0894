"""Updates of part of a variable: ``v[1:3].assign(x)`` and ``v.scatter_nd_update(i, u)``.

Each computes the variable's whole new value with one op (``strided_slice_update`` or
``scatter_nd``) and assigns it, so eager, staged and compiled code share one meaning. As in
TensorFlow, the update is not differentiable (no tape records it); reading the variable
afterwards is, as any read.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.bind import bind
from stagecraft.context import STATE
from stagecraft.convert import convert_to_tensor, register_conversion
from stagecraft.ir import OPS
from stagecraft.ir.errors import UnimplementedError
from stagecraft.ir.ops.slicing import sliced_dims, update_shape_error
from stagecraft.tensor import Tensor, TensorOperators


class SlicedVariable(TensorOperators):
    """``variable[key]``: the slice's value (read when indexed, like TensorFlow) that also
    knows where it came from, so ``assign`` writes that part of the variable.

    >>> import stagecraft as tf
    >>> v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    >>> v[1:3].numpy().tolist()
    [2.0, 3.0]
    >>> _ = v[1:3].assign([20.0, 30.0]); v.numpy().tolist()
    [1.0, 20.0, 30.0, 4.0]
    """

    __slots__ = ("_variable", "_spec", "_dynamic", "_tensor")

    def __init__(self, variable: Any, key: Any):
        from stagecraft.array_ops import slice_spec
        self._variable = variable
        self._spec, self._dynamic = slice_spec(key)
        self._tensor = bind(OPS["strided_slice"], variable.read_value(), *self._dynamic,
                            spec=self._spec)

    def assign(self, value: Any, name: str | None = None) -> Any:
        """Writes ``value`` (exactly the slice's shape: TensorFlow does not broadcast it) into
        the slice; returns the variable."""
        return _update(self, value, None)

    def assign_add(self, delta: Any, name: str | None = None) -> Any:
        """★ Adds ``delta`` to the slice (TensorFlow's slices have only ``assign``)."""
        return _update(self, delta, "add")

    def assign_sub(self, delta: Any, name: str | None = None) -> Any:
        """★ Subtracts ``delta`` from the slice."""
        return _update(self, delta, "subtract")

    # The rest behaves as the slice's tensor.
    def __getattr__(self, name: str) -> Any:
        return getattr(self._tensor, name)

    def _host(self) -> Any:
        return self._tensor._host()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._tensor, dtype)

    def __len__(self) -> int:
        return len(self._tensor)

    def __repr__(self) -> str:
        return repr(self._tensor)

    __str__ = __repr__


register_conversion(SlicedVariable, lambda s, dtype: convert_to_tensor(s._tensor, dtype))


class _NoTape:
    """Runs the ops of an update unrecorded: TensorFlow does not differentiate them."""

    def __enter__(self) -> None:
        self._token = STATE.set(STATE.get().replace(tapes=()))

    def __exit__(self, *exc: Any) -> None:
        STATE.reset(self._token)


def _update(sliced: SlicedVariable, value: Any, op: str | None) -> Any:
    var = sliced._variable
    with _NoTape():
        value = convert_to_tensor(value, var.dtype)
        want = sliced_dims("strided_slice_update", tuple(var._shape), sliced._spec)
        if want is not None and None not in want and value.shape.rank is not None and \
                None not in value.shape.as_list() and tuple(value.shape.as_list()) != want:
            raise UnimplementedError(update_shape_error(want, tuple(value.shape.as_list())))
        if op is not None:
            old = bind(OPS["strided_slice"], var.read_value(), *sliced._dynamic,
                       spec=sliced._spec)
            value = bind(OPS[op], old, value)
        new = bind(OPS["strided_slice_update"], var.read_value(), value, *sliced._dynamic,
                   spec=sliced._spec)
        return var.assign(new)


def scatter_nd(var: Any, indices: Any, updates: Any, mode: str) -> Any:
    """The variable with ``updates`` written to / added to / subtracted from (``mode``) the
    slices at ``indices``; out-of-range indices raise ``InvalidArgumentError``."""
    with _NoTape():
        indices = convert_to_tensor(indices)
        if not indices.dtype.is_integer:
            raise TypeError(f"scatter_nd_{mode}: indices must be int32 or int64, got "
                            f"{indices.dtype.name}.")
        new = bind(OPS["scatter_nd"], var.read_value(), indices,
                   convert_to_tensor(updates, var.dtype), mode=mode)
        return var.assign(new)


__all__ = ["SlicedVariable", "scatter_nd"]
