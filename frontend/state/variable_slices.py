"""Updates of part of a variable: ``v[1:3].assign(x)`` and ``v.scatter_nd_update(i, u)``.

Each computes the variable's whole new value with one op (``strided_slice_update`` or
``scatter_nd``) and assigns it, so eager, staged and compiled code share one meaning. As in
TensorFlow, the update is not differentiable (no tape records it); reading the variable
afterwards is, as any read.
"""
from __future__ import annotations

from typing import Any

import weakref

from stagecraft.eager.bind import bind
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir.errors import UnimplementedError
from stagecraft.ir.ops.slicing import sliced_dims, update_shape_error
from stagecraft.eager.tensor import LATE_BOUND, Tensor
from stagecraft.ops.array_ops import slice_spec


# id(slice tensor) -> (weak reference to it, variable, spec, run-time bounds): what a tensor
# read by `variable[key]` needs for `.assign`; the entry goes when the tensor does.
_ORIGINS: dict[int, tuple] = {}


def read_slice(variable: Any, key: Any) -> Tensor:
    """``variable[key]``: the slice's value (a tensor read now, as TensorFlow does) whose
    ``assign`` writes that part of the variable and returns the variable.

    >>> import stagecraft as tf
    >>> v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    >>> v[1:3].numpy().tolist()
    [2.0, 3.0]
    >>> _ = v[1:3].assign([20.0, 30.0]); v.numpy().tolist()
    [1.0, 20.0, 30.0, 4.0]
    >>> _ = v[0].assign_add(5.0); v.numpy().tolist()  # ★ assign_add/assign_sub too
    [6.0, 20.0, 30.0, 4.0]
    """
    spec, dynamic = slice_spec(key)
    t = bind(OPS["strided_slice"], variable.read_value(), *dynamic, spec=spec)
    uid = id(t)
    _ORIGINS[uid] = (weakref.ref(t, lambda _: _ORIGINS.pop(uid, None)), variable, spec, dynamic)
    return t


def slice_method(t: Tensor, name: str) -> Any:
    """``t.assign``/``assign_add``/``assign_sub`` for a tensor read by ``variable[key]``,
    else None. TensorFlow's slices have only ``assign``; the other two are ★ additions."""
    origin = _ORIGINS.get(id(t))
    if origin is None or origin[0]() is not t:
        return None
    _, variable, spec, dynamic = origin
    op = {"assign": None, "assign_add": "add", "assign_sub": "subtract"}[name]

    def update(value: Any, name: str | None = None) -> Any:
        return _update(variable, spec, dynamic, value, op)
    return update


class _NoTape:
    """Runs the ops of an update unrecorded: TensorFlow does not differentiate them."""

    def __enter__(self) -> None:
        self._token = STATE.set(STATE.get().replace(tapes=()))

    def __exit__(self, *exc: Any) -> None:
        STATE.reset(self._token)



LATE_BOUND["slice_method"] = slice_method  # variable[key].assign(x)

def _update(var: Any, spec: tuple, dynamic: list, value: Any, op: str | None) -> Any:
    with _NoTape():
        value = convert_to_tensor(value, var.dtype)
        want = sliced_dims("strided_slice_update", tuple(var._shape), spec)
        if want is not None and None not in want and value.shape.rank is not None and \
                None not in value.shape.as_list() and tuple(value.shape.as_list()) != want:
            # TensorFlow never broadcasts the r-value, and reports it as unimplemented
            raise UnimplementedError(update_shape_error(want, tuple(value.shape.as_list())))
        if op is not None:
            old = bind(OPS["strided_slice"], var.read_value(), *dynamic, spec=spec)
            value = bind(OPS[op], old, value)
        new = bind(OPS["strided_slice_update"], var.read_value(), value, *dynamic, spec=spec)
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


__all__ = ["read_slice", "slice_method", "scatter_nd"]
