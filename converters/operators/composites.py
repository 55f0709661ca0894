"""Reading and writing composite symbols (``x['b']``, ``obj.attr``) that converted control flow
carries as state: a missing item or attribute reads as ``Undefined``, and storing
``Undefined`` removes it again (so tracing a branch that creates ``x['b']`` leaves no trace of
it in the user's dict)."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.converters.operators.variables import Undefined, is_undefined


def ldu(read: Callable[[], Any], name: str) -> Any:
    """``read()``, or ``Undefined(name)`` when the item, attribute or its container does not
    exist.

    >>> ldu(lambda: {}['b'], "x['b']")
    Undefined("x['b']")
    """
    try:
        return read()
    except (KeyError, IndexError, AttributeError, NameError):
        return Undefined(name)


def set_item(parent: Callable[[], Any], key: Any, value: Any) -> None:
    """``parent()[key] = value``; an ``Undefined`` value deletes a dict's ``key`` instead.

    >>> d = {"b": 1}
    >>> set_item(lambda: d, "b", Undefined("d['b']")); d
    {}
    """
    if is_undefined(value):
        try:
            container = parent()
        except (KeyError, IndexError, AttributeError, NameError):
            return
        if isinstance(container, dict):
            container.pop(key, None)
        return
    parent()[key] = value


def set_attr(parent: Callable[[], Any], attr: str, value: Any) -> None:
    """``setattr(parent(), attr, value)``; an ``Undefined`` value deletes an instance
    attribute instead."""
    if is_undefined(value):
        try:
            obj = parent()
        except (KeyError, IndexError, AttributeError, NameError):
            return
        if attr in getattr(obj, "__dict__", {}):
            delattr(obj, attr)
        return
    setattr(parent(), attr, value)
