"""Tracked containers and the registry of deferred checkpoint children (restore-on-create).

A restore that reaches a checkpoint child whose Python object does not exist yet leaves a
callback here, keyed by the parent object and the edge name. Adding a dependency with that
name later (``Module.__setattr__``, ``Checkpoint`` attributes, ``TrackedList.append``,
``TrackedDict.__setitem__``) calls ``notify``, which runs the callback: the new value is matched
and restored at once, as TensorFlow does. This file imports nothing from stagecraft, so
``module.py`` can use it without an import cycle.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable

# id(parent) -> (weak reference to parent, {edge name: [callback, ...]}). Keyed by id, not by
# the object, because tracked lists and dicts (and Variables) are unhashable.
_PENDING: dict[int, tuple[weakref.ref, dict[str, list[Callable[[Any], bool]]]]] = {}


def defer(parent: Any, name: str, callback: Callable[[Any], bool]) -> bool:
    """Runs ``callback(value)`` when a dependency ``name`` is added to ``parent``.

    The callback returns True when it used the value (it is then dropped) and False to keep
    waiting (the value was not trackable). Returns False when ``parent`` cannot be weakly
    referenced (a plain tuple): nothing can be added to it later anyway.

    >>> class Parent:
    ...     pass
    >>> p, seen = Parent(), []
    >>> defer(p, "kernel", lambda value: seen.append(value) or True)
    True
    >>> notify(p, "kernel", 42); seen
    [42]
    """
    key = id(parent)
    entry = _PENDING.get(key)
    if entry is None or entry[0]() is not parent:
        try:
            ref = weakref.ref(parent, lambda _, key=key, table=_PENDING: table.pop(key, None))
        except TypeError:
            return False
        entry = (ref, {})
        _PENDING[key] = entry
    entry[1].setdefault(name, []).append(callback)
    return True


def notify(parent: Any, name: Any, value: Any) -> None:
    """Tells the registry that ``parent`` gained the dependency ``name`` -> ``value``.

    Pending callbacks for that name run in the order they were deferred (a later restore wins).
    An exception from a callback (an incompatible shape) propagates to the assignment.
    """
    entry = _PENDING.get(id(parent))
    if entry is None or entry[0]() is not parent or not isinstance(name, str):
        return
    callbacks = entry[1].get(name)
    if not callbacks:
        return
    del entry[1][name]
    kept = [cb for cb in callbacks if not cb(value)]
    if kept:
        entry[1].setdefault(name, [])[:0] = kept
    if not entry[1]:
        _PENDING.pop(id(parent), None)


def pending_names(parent: Any) -> list[str]:
    """The edge names still waiting for a dependency on ``parent`` (sorted).

    >>> class Parent:
    ...     pass
    >>> p = Parent(); _ = defer(p, "b", lambda v: True); _ = defer(p, "a", lambda v: True)
    >>> pending_names(p)
    ['a', 'b']
    """
    entry = _PENDING.get(id(parent))
    if entry is None or entry[0]() is not parent:
        return []
    return sorted(entry[1])


def wrap(value: Any) -> Any:
    """Plain lists and dicts become ``TrackedList``/``TrackedDict`` (recursively), so that
    later appends and insertions can be restored; anything else is returned unchanged.

    >>> wrap([1, {"a": [2]}])
    [1, {'a': [2]}]
    >>> type(wrap([1])).__name__, wrap([1]) == [1], isinstance(wrap([1]), list)
    ('TrackedList', True, True)
    """
    cls = type(value)
    if cls is list:
        return TrackedList(value)
    if cls is dict:
        return TrackedDict(value)
    return value


class TrackedList(list):
    """A ``list`` whose additions are checked against pending checkpoint children.

    It is a real list (``isinstance(x, list)``, equal to plain lists, flattened by
    ``stagecraft.nest`` like one); element ``i`` is the checkpoint edge ``"i"``. A module copies
    a plain list into one on assignment, as ``tf.Module`` wraps lists: keep using the
    attribute (``self.layers.append(...)``), not the original list object.

    >>> lst = TrackedList()
    >>> lst.append(3); lst += [4]; lst
    [3, 4]
    """

    __slots__ = ("__weakref__",)

    def __init__(self, items: Iterable[Any] = ()):
        super().__init__(wrap(v) for v in items)

    def _added(self, index: int, value: Any) -> Any:
        value = wrap(value)
        notify(self, str(index), value)
        return value

    def append(self, value: Any) -> None:
        super().append(self._added(len(self), value))

    def extend(self, values: Iterable[Any]) -> None:
        for v in values:
            self.append(v)

    def __iadd__(self, values: Iterable[Any]) -> "TrackedList":  # type: ignore[override]
        self.extend(values)
        return self

    def insert(self, index: int, value: Any) -> None:
        n = len(self)
        pos = max(0, min(n, index if index >= 0 else n + index))
        super().insert(pos, self._added(pos, value))

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            super().__setitem__(index, [wrap(v) for v in value])
            return
        pos = index if index >= 0 else len(self) + index
        super().__setitem__(index, self._added(pos, value))


class TrackedDict(dict):
    """A ``dict`` whose insertions are checked against pending checkpoint children (the key
    is the edge name). Equal to plain dicts; ``nest`` flattens it by sorted key like a dict.

    >>> d = TrackedDict(a=1); d["b"] = 2; d.update(c=3); d == {"a": 1, "b": 2, "c": 3}
    True
    """

    __slots__ = ("__weakref__",)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()
        self.update(*args, **kwargs)

    def __setitem__(self, key: Any, value: Any) -> None:
        value = wrap(value)
        notify(self, key, value)
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def __ior__(self, other: Any) -> "TrackedDict":  # type: ignore[override]
        self.update(other)
        return self

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]
