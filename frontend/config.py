"""``stagecraft.config``: global switches."""
from __future__ import annotations

_RUN_FUNCTIONS_EAGERLY = [False]


def run_functions_eagerly(run_eagerly: bool) -> None:
    """When True, ``@function`` calls run the plain Python function (for debugging): no
    tracing, Python side effects on every call.

    >>> import stagecraft as tf
    >>> tf.config.run_functions_eagerly(True); tf.config.functions_run_eagerly()
    True
    >>> tf.config.run_functions_eagerly(False)
    """
    _RUN_FUNCTIONS_EAGERLY[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in effect."""
    return _RUN_FUNCTIONS_EAGERLY[0]
