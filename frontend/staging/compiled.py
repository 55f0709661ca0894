"""``show_compiled``: the code a backend generated for a staged function."""
from __future__ import annotations

from typing import Any
from stagecraft.staging.concrete_function import ConcreteFunction
from stagecraft.staging.function import Function


def compiled_source(f: Any, *args: Any, **kwargs: Any) -> str:
    """The generated source of ``f``'s graph function for ``args`` (a ``ConcreteFunction``,
    or a ``Function`` traced for ``args``; with no arguments, its most recent trace). For a
    graph that runs on the reference interpreter the text says so and why; for a GPU trace it
    is the staged GPU module (one ``cuda.jit`` kernel per fusion group and the host function).

    >>> import stagecraft as tf
    >>> @tf.function(backend="numba")     # the default backend, named
    ... def f(x):
    ...     return tf.tanh(x) * 2.0
    >>> text = tf.compiled_source(f, tf.constant([1.0, 2.0]))
    >>> "def graph_fn(x):" in text and "# %1: f32[2] = multiply %0, 2.0:f32" in text
    True
    """
    concrete = _concrete(f, args, kwargs)
    exe = concrete.executable
    if exe.source is not None:
        return exe.source
    reason = getattr(exe, "fallback_reason", None)
    return (f"# {concrete.name} runs on the reference interpreter (no generated code)"
            + (f":\n# {reason}" if reason else ".") + "\n")


def show_compiled(f: Any, *args: Any, **kwargs: Any) -> str:
    """Prints (and returns) :func:`compiled_source` for ``f`` and ``args``.

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: x + 1, backend="reference")
    >>> _ = tf.show_compiled(f, tf.constant(1))
    # <lambda> runs on the reference interpreter (no generated code).
    """
    text = compiled_source(f, *args, **kwargs)
    print(text, end="")
    return text


def _concrete(f: Any, args: tuple, kwargs: dict) -> Any:
    if isinstance(f, ConcreteFunction):
        return f
    if not isinstance(f, Function):
        raise TypeError(f"show_compiled: expected a tf.function or a ConcreteFunction, got "
                        f"{type(f).__name__}; decorate the function with @tf.function first.")
    if args or kwargs:
        return f.get_concrete_function(*args, **kwargs)
    live = [e for e in f._entries if e.alive()]
    if not live:
        raise ValueError(f"show_compiled: '{f.__name__}' has not been traced yet; call it or "
                         f"pass example arguments: show_compiled(f, x).")
    return live[-1].concrete
