"""``RemoteVariable``: a ``Variable`` whose value lives on a remote worker.

``tf.Variable(...)`` creates one (``Variable.__new__`` asks ``PLACED_VARIABLES``) when it runs
under a remote ``device`` scope, or when its initial value is a remote tensor and no scope
says otherwise. Reads give remote tensors (recorded by tapes like any read, so gradients with
respect to it are computed on its worker); ``assign``/``assign_add``/``assign_sub`` run there;
``numpy()`` and checkpoints fetch the value. Functions that use it run on its worker.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor, register_conversion
from stagecraft.eager.remote import RemoteTensor, is_remote_spec, runtime
from stagecraft.ir.shapes import as_dims, format_dims, is_compatible
from stagecraft.state import variables as _variables
from stagecraft.state.variables import Variable


class RemoteVariable(Variable):
    """A variable on a remote task (see the module docstring).

    >>> import stagecraft as tf
    >>> tf.distribute.connect(num_workers=1, transport="in_process")
    >>> with tf.device("/job:worker/task:0"):
    ...     v = tf.Variable([1.0, 2.0])
    >>> _ = v.assign_add([1.0, 1.0])
    >>> v.device, v.numpy().tolist()
    ('/job:worker/replica:0/task:0/device:CPU:0', [2.0, 3.0])
    >>> tf.distribute.disconnect()
    """

    __slots__ = ()

    def _store_initial(self, t: Any, graph: Any, shape: Any) -> None:
        state = STATE.get()
        cluster = runtime()
        target = cluster.resolve(state.device, "a new variable") if \
            state.place is not None and is_remote_spec(state.place) else t.device
        self._shape = as_dims(t.shape.as_list()) if shape is None else as_dims(shape)
        if not is_compatible(self._shape, tuple(t.shape.as_list())):
            raise ValueError(f"Variable: initial value of shape {t.shape.as_list()} does not "
                             f"match shape={format_dims(self._shape)}.")
        self._device = target
        self._value = cluster.new_variable(t, target, self._name, self._trainable)

    def read_value(self) -> Any:
        """The current value, as a tensor on the variable's worker (recorded by tapes)."""
        state = STATE.get()
        if state.graph is not None:
            t = state.graph.read_variable(self)
        else:
            t = self._value.cluster.read_variable(self._value, self._value.shape)
        for tape in state.tapes:
            tape.record_read(self, t)
        return t

    value = read_value

    def _host(self) -> np.ndarray:
        return np.asarray(self._value)  # fetched from the worker

    def _checked(self, value: Any, what: str) -> Any:
        t = convert_to_tensor(value, self.dtype)
        if not is_compatible(self._shape, tuple(t.shape.as_list())):
            raise ValueError(f"Cannot {what} variable '{self.name}': Shape mismatch. The "
                             f"variable shape {self.shape}, and the assigned value shape "
                             f"{t.shape} are incompatible.")
        return t

    def _store(self, value: Any) -> None:
        self._value.cluster.update_variable(self._value, "assign", value)
        self._value.shape = tuple(value.shape.as_list())

    def _update(self, delta: Any, op: str, what: str) -> None:
        t = self._checked(delta, what)
        self._value.cluster.update_variable(self._value, "add" if op == "add" else "sub", t)

    def __deepcopy__(self, memo: dict) -> "RemoteVariable":
        return RemoteVariable(self.read_value(), trainable=self._trainable,
                              name=self._name.rsplit("/", 1)[-1])


def _pick(initial_value: Any = None, *args: Any, **kwargs: Any) -> type | None:
    """``RemoteVariable`` for a variable created eagerly under a remote device scope, or from
    a remote tensor outside any scope (``Variable.__new__`` asks)."""
    state = STATE.get()
    if state.graph is not None or runtime() is None:
        return None
    if state.place is not None:
        return RemoteVariable if is_remote_spec(state.place) else None
    if state.device is None and isinstance(initial_value, RemoteTensor):
        return RemoteVariable
    return None


_variables.PLACED_VARIABLES.append(_pick)
# Conversions are looked up by exact type: ops read a RemoteVariable as they read a Variable.
register_conversion(RemoteVariable, _variables._convert_variable)
