"""``stagecraft.autograph``: inspect and control AutoGraph conversion."""
from __future__ import annotations

import types
from typing import Any, Callable


def to_code(entity: Any, recursive: bool = True, experimental_optional_features: Any = None) -> str:
    """The Python source AutoGraph generates for ``entity`` (a function or @function).

    >>> import stagecraft as tf
    >>> def f(x):
    ...     while x > 0:
    ...         x = x - 1
    ...     return x
    >>> "while_stmt" in tf.autograph.to_code(f)
    True
    """
    from stagecraft.converters.api import to_code as _to_code
    return _to_code(entity)


def show_converted(f: Any, trace: bool = False) -> str:
    """Prints and returns the converted source of ``f`` (stagecraft-only). With
    ``trace=True``, comment lines after the code report, for each converted ``if``/``while``/
    ``for`` ('file:line'), whether the last trace of ``f`` ran it as Python or staged it and
    which variables it carried.

    >>> import stagecraft as tf
    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> _ = tf.show_converted(f)  # doctest: +ELLIPSIS
    def f(x):
    ...
    >>> from stagecraft.converters.api import _example
    >>> g = tf.function(_example)
    >>> _ = g(3)  # a Python int: the if runs as Python
    >>> _ = tf.show_converted(g, trace=True)  # doctest: +ELLIPSIS
    def _example(x):
    ...
    # Trace report (last trace of _example):
    #   ...  if     python  carries: x
    """
    from stagecraft.converters.api import show_converted as _show
    return _show(f, trace=trace)


def _do_not_convert(func: Callable | None = None) -> Callable:
    """Marks a function so AutoGraph calls it unconverted."""
    from stagecraft.converters.api import do_not_convert
    return do_not_convert(func)


def _set_loop_options(parallel_iterations: Any = None, swap_memory: Any = None,
                      maximum_iterations: Any = None, shape_invariants: Any = None) -> None:
    """A directive for the loop whose body it starts (``maximum_iterations``,
    ``shape_invariants=[(variable, shape), ...]``); AutoGraph moves it onto the loop, so the
    call itself does nothing (also when the loop runs as plain Python)."""


experimental = types.SimpleNamespace(do_not_convert=_do_not_convert,
                                     set_loop_options=_set_loop_options)
