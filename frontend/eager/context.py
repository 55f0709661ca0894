"""The execution context (active tapes, the graph being built, the name and device scopes),
kept in a ``contextvars.ContextVar`` so threads and async tasks each have their own. (Process-
wide switches live elsewhere: ``config.run_functions_eagerly``, device policies in
``devices.device``, the global seed in ``state.random_state``.)"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any


class State:
    """An immutable snapshot of the context; entering a scope installs a modified copy."""

    __slots__ = ("tapes", "graph", "name_scope", "device", "place")

    def __init__(self, tapes: tuple = (), graph: Any = None, name_scope: str = "",
                 device: Any = None, place: Any = None):
        self.tapes = tapes    # GradientTapes recording now, outermost first
        self.graph = graph    # the graph under construction, None when executing eagerly
        self.name_scope = name_scope  # prefix of new variables' names ("dense/")
        self.device = device  # the merged DeviceSpec of the `with device(...)` scopes, or None
        # The same spec when it asks for a device other than the CPU (eager ops then go
        # through stagecraft.eager.placement), else None: one `is None` test on bind's hot path.
        self.place = place

    def replace(self, **changes: Any) -> "State":
        new = State(self.tapes, self.graph, self.name_scope, self.device, self.place)
        for k, v in changes.items():
            setattr(new, k, v)
        return new


EAGER = State()
STATE: ContextVar[State] = ContextVar("stagecraft_state", default=EAGER)


def executing_eagerly() -> bool:
    """True when ops run immediately (not while a ``function`` is being traced).

    >>> import stagecraft as tf
    >>> tf.executing_eagerly()
    True
    """
    return STATE.get().graph is None
