"""``stagecraft.autograph``: inspect and control AutoGraph conversion."""
from __future__ import annotations

import enum
import logging
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
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.api import to_code as _to_code
    return _to_code(entity)


def to_graph(entity: Any, recursive: bool = True,
             experimental_optional_features: Any = None) -> Callable:
    """The converted Python function of ``entity`` (a function, method or ``@function``):
    its ``if``/``while``/``for`` become operator calls that stage graph control flow on
    symbolic tensors and run as Python otherwise. As in TensorFlow, call it inside a
    ``@function`` (or wrap it in one) to stage it.

    >>> import stagecraft as tf
    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> g = tf.autograph.to_graph(f)
    >>> int(tf.function(g)(tf.constant(-3)))
    3
    """
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.api import _python_function, convert
    fn = _python_function(entity)
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    return convert(fn)


def set_verbosity(level: int, alsologtostdout: bool = False) -> None:
    """Sets how much AutoGraph logs (the ``stagecraft`` logger: 0 = warnings only, higher =
    debug); ``alsologtostdout`` adds a stdout handler."""
    logger = logging.getLogger("stagecraft")
    logger.setLevel(logging.DEBUG if level > 0 else logging.WARNING)
    if alsologtostdout and not any(getattr(h, "_sc_stdout", False) for h in logger.handlers):
        import sys
        handler = logging.StreamHandler(sys.stdout)
        handler._sc_stdout = True
        logger.addHandler(handler)


def trace(*args: Any) -> None:
    """Prints ``args`` when the code runs as Python (while tracing, inside ``@function``):
    AutoGraph's debugging aid, Python's ``print`` without conversion."""
    print(*args)


class Feature(enum.Enum):
    """AutoGraph's optional conversion features (``tf.function(experimental_autograph_options=
    ...)``). stagecraft always converts asserts, ``print`` and the other builtins, and the
    rest have no separate switch, so the values are accepted for compatibility and change
    nothing."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


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
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.api import show_converted as _show
    return _show(f, trace=trace)


def _do_not_convert(func: Callable | None = None) -> Callable:
    """Marks a function so AutoGraph calls it unconverted (also as the top-level function of
    a ``@function``): its Python control flow then works only on Python values and eager
    tensors. Usable as ``@do_not_convert`` or ``do_not_convert(f)``.

    >>> import stagecraft as tf
    >>> @tf.autograph.experimental.do_not_convert
    ... def f(x):
    ...     return x if x > 0 else -x
    >>> "if_exp" in tf.autograph.to_code(f)  # to_code still shows what conversion would give
    True
    >>> int(tf.function(f)(-2))
    2
    """
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.api import do_not_convert
    return do_not_convert(func)


def _set_loop_options(parallel_iterations: Any = None, swap_memory: Any = None,
                      maximum_iterations: Any = None, shape_invariants: Any = None) -> None:
    """A directive for the loop whose body it starts (``maximum_iterations``,
    ``shape_invariants=[(variable, shape), ...]``); AutoGraph moves it onto the loop, so the
    call itself does nothing (also when the loop runs as plain Python)."""


experimental = types.SimpleNamespace(do_not_convert=_do_not_convert,
                                     set_loop_options=_set_loop_options, Feature=Feature)
