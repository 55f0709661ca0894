"""Deferred restoration of optimizer slot variables.

An optimizer creates its per-variable state ("slots": momentum, Adam's ``m`` and ``v``) lazily,
on its first ``apply_gradients``. A checkpoint restored before that moment keeps the saved slot
values here, keyed by (optimizer, variable, slot name); the optimizer calls ``slot_created``
right after making a slot, which assigns the saved value ("restore-on-create", as TensorFlow).

Optimizers take part in checkpoints through two methods:
``optimizer._checkpoint_slots() -> list[(variable, slot_name, slot_variable)]`` (what to save)
and a call to ``slot_created(optimizer, variable, slot_name, slot_variable)`` per new slot.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

# optimizer -> {(id(variable), slot_name): (weakref(variable), restore)}
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def defer_slot_restore(optimizer: Any, variable: Any, slot_name: str,
                       restore: Callable[[Any], None]) -> None:
    """Remember to call ``restore(slot_variable)`` when ``optimizer`` creates this slot."""
    pending = _PENDING.setdefault(optimizer, {})
    pending[(id(variable), slot_name)] = (weakref.ref(variable), restore)


def slot_created(optimizer: Any, variable: Any, slot_name: str, slot_variable: Any) -> None:
    """Called by an optimizer after creating a slot: applies a pending checkpoint value.

    >>> import stagecraft as tf
    >>> opt, v, m = object.__new__(type("Opt", (), {})), tf.Variable(1.0), tf.Variable(0.0)
    >>> defer_slot_restore(opt, v, "m", lambda slot: slot.assign(5.0))
    >>> slot_created(opt, v, "m", m); float(m.numpy())
    5.0
    """
    pending = _PENDING.get(optimizer)
    if not pending:
        return
    entry = pending.pop((id(variable), slot_name), None)
    if entry is not None and entry[0]() is variable:  # the id was not reused by another object
        entry[1](slot_variable)


def pending_count(optimizer: Any) -> int:
    """How many saved slot values still wait for ``optimizer`` to create their slot."""
    return len(_PENDING.get(optimizer, ()))
