"""``init_scope`` (run code eagerly while tracing) and ``name_scope`` (prefix the names of the
variables created inside)."""
from __future__ import annotations

import contextlib
import re
import weakref
from typing import Any, Iterator

from stagecraft.eager.context import STATE


@contextlib.contextmanager
def init_scope() -> Iterator[None]:
    """Lifts the ops inside out of every graph being built: they run eagerly, once, at trace
    time, and no tape records them. Symbolic tensors of the trace cannot be used inside.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     with tf.init_scope():
    ...         eager = tf.executing_eagerly()
    ...     return x + 1, eager
    >>> bool(f(tf.constant(1))[1])
    True
    """
    token = STATE.set(STATE.get().replace(graph=None, tapes=()))
    try:
        yield
    finally:
        STATE.reset(token)


# TensorFlow's Graph.name_scope pattern (checked only while tracing, as TF does).
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
# Scope names already used in each graph being traced: graphs make them unique, eager does not.
_USED: "weakref.WeakKeyDictionary[Any, set[str]]" = weakref.WeakKeyDictionary()


class name_scope:  # noqa: N801 (TensorFlow's spelling)
    """A context manager that prefixes the names of the variables created inside it
    (``'outer/inner/w:0'``), TensorFlow 2's ``tf.name_scope``.

    Scopes nest; a name ending in ``'/'`` is absolute (it replaces the current scope) and
    ``''`` resets to the root. ``with`` returns the full scope name. Eagerly the same name may
    be entered twice; while a ``function`` is traced a repeated name gets a suffix
    (``'a_1/'``), as in a TensorFlow graph.

    >>> import stagecraft as tf
    >>> with tf.name_scope("outer"):
    ...     with tf.name_scope("inner") as scope:
    ...         v = tf.Variable(1.0, name="w")
    >>> scope, v.name
    ('outer/inner/', 'outer/inner/w:0')
    >>> with tf.name_scope("outer"), tf.name_scope(""):
    ...     tf.Variable(1.0, name="w").name
    'w:0'
    """

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._tokens: list = []

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        state = STATE.get()
        name = self._name
        if not name:
            scope = ""
        elif name.endswith("/"):
            scope = name
        else:
            scope = state.name_scope + name + "/"
        if name and state.graph is not None:
            scope = _unique_in_graph(state.graph, scope, name)
        self._tokens.append(STATE.set(state.replace(name_scope=scope)))
        return scope

    def __exit__(self, *exc: Any) -> None:
        STATE.reset(self._tokens.pop())

    def __repr__(self) -> str:
        return f"name_scope({self._name!r})"


def _unique_in_graph(graph: Any, scope: str, name: str) -> str:
    if not _VALID_SCOPE_NAME.match(name):
        raise ValueError(f"'{name}' is not a valid scope name. A scope name has to match the "
                         f"following pattern: {_VALID_SCOPE_NAME.pattern}")
    if name.endswith("/"):
        return scope  # absolute names are taken as they are
    used = _USED.setdefault(graph, set())
    base, candidate, i = scope[:-1], scope[:-1], 1
    while candidate.lower() in used:
        candidate, i = f"{base}_{i}", i + 1
    used.add(candidate.lower())
    return candidate + "/"


def get_current_name_scope() -> str:
    """The current name scope, without its trailing ``'/'`` (``''`` at the root).

    >>> import stagecraft as tf
    >>> with tf.name_scope("a"), tf.name_scope("b"):
    ...     tf.get_current_name_scope()
    'a/b'
    """
    return STATE.get().name_scope.rstrip("/")
