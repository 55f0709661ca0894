"""The ``training`` mode an outer layer call passes to the layers it calls, as Keras's call
context does: a layer called with ``training=True`` (``fit`` calls the model so) runs every
layer inside it in training mode unless that inner call says otherwise, even when a
subclassed model's ``call`` does not pass ``training`` on. Outside every such call the mode
is the learning phase: None (layers default to inference), or what ``set_learning_phase``
chose.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

_TRAINING: contextvars.ContextVar = contextvars.ContextVar("keras_training", default=None)
_LEARNING_PHASE: list = [None]


def training() -> Any:
    """The ``training`` value of the innermost enclosing layer call that had one, else the
    learning phase (None when never set).

    >>> with training_scope(True):
    ...     training()
    True
    >>> training() is None
    True
    """
    value = _TRAINING.get()
    return _LEARNING_PHASE[0] if value is None else value


@contextlib.contextmanager
def training_scope(value: Any) -> Iterator[None]:
    """Makes ``value`` the mode of the calls inside (None leaves the outer mode)."""
    if value is None:
        yield
        return
    token = _TRAINING.set(value)
    try:
        yield
    finally:
        _TRAINING.reset(token)


def learning_phase() -> int:
    """``keras.backend.learning_phase()``: 1 in training mode, 0 otherwise (the default).

    >>> learning_phase()
    0
    """
    value = training()
    return int(bool(value)) if isinstance(value, (bool, int)) else 0


def set_learning_phase(value: int) -> None:
    """``keras.backend.set_learning_phase``: the mode of layer calls that no outer call or
    argument decides (1: training; 0: inference, the default, where layers use their own
    ``training`` defaults).

    >>> set_learning_phase(1); learning_phase()
    1
    >>> set_learning_phase(0)
    """
    if value not in (0, 1):
        raise ValueError(f"set_learning_phase: the learning phase must be 0 or 1, got {value!r}.")
    _LEARNING_PHASE[0] = True if value else None
