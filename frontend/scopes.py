"""``init_scope``: run code eagerly while a function is being traced."""
from __future__ import annotations

import contextlib
from typing import Iterator

from stagecraft.context import STATE


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
