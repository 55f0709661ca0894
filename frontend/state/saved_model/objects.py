"""The object side of a SavedModel: which objects are nodes (the checkpoint's object graph plus
the ``tf.function``s attached to user objects), the generic ``UserObject`` a load rebuilds in
place of the original classes, and the variable values (written and read as a checkpoint)."""
from __future__ import annotations

import inspect
from typing import Any

from stagecraft.staging.function import Function
from stagecraft.state.variables import Variable
from stagecraft.state.checkpoint import graph
from stagecraft.state.checkpoint.checkpoint import Checkpoint
from stagecraft.state.saved_model.format import CorruptSavedModelError


def _graph() -> Any:
    # Imported on use: the checkpoint package may itself import stagecraft.state.saved_model.
    return graph


def kind_of(obj: Any) -> str:
    """The node kind of a trackable object (or a function) in the saved document."""
    if isinstance(obj, Variable):
        return "variable"
    if isinstance(obj, Function):
        return "function"
    if isinstance(obj, list):
        return "list"
    if isinstance(obj, tuple):
        return "tuple"
    if isinstance(obj, dict):
        return "dict"
    return "user_object"


def children(obj: Any) -> list[tuple[str, Any]]:
    """The checkpoint's named children of ``obj`` (so SavedModel edges are checkpoint edges)."""
    return _graph().children(obj)


def functions_of(obj: Any) -> list[tuple[str, Function]]:
    """The tf.functions on a user object: instance attributes (in assignment order), then the
    ``@tf.function`` methods of its class by name (each instance has its own Function, which
    holds that instance's traces).

    >>> import stagecraft as tf
    >>> class M(tf.Module):
    ...     @tf.function
    ...     def __call__(self, x):
    ...         return x
    >>> m = M(); m.g = tf.function(lambda x: x)
    >>> [name for name, _ in functions_of(m)]
    ['g', '__call__']
    """
    try:
        attrs = vars(obj)
    except TypeError:
        return []
    found = [(k, v) for k, v in attrs.items() if isinstance(v, Function)]
    for name in sorted(dir(type(obj))):
        if name in attrs:
            continue  # an instance attribute shadows the class's method
        try:
            attr = inspect.getattr_static(type(obj), name)
        except AttributeError:
            continue
        if isinstance(attr, Function):
            found.append((name, getattr(obj, name)))
    return found


def is_trackable(obj: Any) -> bool:
    """Whether ``obj`` can be the root of a SavedModel: a trackable object (tf.Module,
    Checkpoint, ...) or a user object holding variables, modules or tf.functions.

    >>> import stagecraft as tf
    >>> class Holder:
    ...     pass
    >>> h = Holder(); empty = is_trackable(h); h.f = tf.function(lambda x: x)
    >>> empty, is_trackable(h), is_trackable(tf.Module()), is_trackable([tf.Variable(1.0)])
    (False, True, True, False)
    """
    if isinstance(obj, (Variable, list, tuple, dict, Function)):
        return False
    if _graph().is_trackable(obj):
        return True
    try:
        attrs = vars(obj)
    except TypeError:
        return False
    return any(_graph().is_trackable(v) for v in attrs.values()) or bool(functions_of(obj))


class UserObject:
    """What ``tf.saved_model.load`` gives back for each saved object: a plain object with the
    saved attributes (variables, sub-objects, lists, dicts and restored functions), no Python
    code of the original class. Calling it calls its restored ``__call__``.

    >>> obj = UserObject("Dense", ["w"]); obj.w = 1; obj
    <UserObject of a saved Dense with attributes ['w']>
    """

    def __init__(self, type_name: str = "object", tracked: list[str] | None = None):
        self.__dict__["_sc_type_name"] = type_name
        self.__dict__["_sc_tracked"] = list(tracked or [])

    def _checkpoint_children(self) -> list[tuple[str, Any]]:
        """The saved checkpoint edges, in their saved order (functions are not edges)."""
        d = self.__dict__
        return [(n, d[n]) for n in d["_sc_tracked"] if n in d and _graph().is_trackable(d[n])]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.__dict__.get("__call__")
        if fn is None:
            raise TypeError(f"This object loaded from a SavedModel (a saved "
                            f"{self._sc_type_name}) is not callable: no __call__ "
                            f"tf.function was saved with it.")
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        names = [k for k in self.__dict__ if not k.startswith("_sc_")]
        return f"<UserObject of a saved {self._sc_type_name} with attributes {names}>"


class _Root:
    """Presents a plain user object (not a tf.Module) to the checkpoint as a root whose
    children are that object's trackable attributes: the same edges a load rebuilds."""

    def __init__(self, obj: Any):
        self._obj = obj

    def _checkpoint_children(self) -> list[tuple[str, Any]]:
        return children(self._obj)


def _checkpoint(root: Any) -> Any:
    return Checkpoint(root=root if _graph().is_trackable(root) else _Root(root))


def write_variables(root: Any, prefix: str) -> None:
    """Writes every variable reachable from ``root`` as the checkpoint ``prefix``."""
    _checkpoint(root).write(prefix)


def read_variables(root: Any, prefix: str) -> None:
    """Restores the loaded variables from the checkpoint ``prefix``; every variable of the
    loaded tree must receive a value (extra values, e.g. optimizer slots, are allowed)."""
    status = _checkpoint(root).read(prefix).expect_partial()
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise CorruptSavedModelError(
            f"{prefix}.index: the SavedModel's variables checkpoint does not match its "
            f"object graph: {str(e).splitlines()[0]} Save the SavedModel again.") from None
