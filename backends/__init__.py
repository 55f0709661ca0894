"""Backends that compile graph functions (``compile(graph) -> executable``): the Numba CPU
code generator (the default), the reference interpreter, and staged GPU functions (``"cuda"``,
which ``tf.function`` selects for calls under a GPU device scope or with GPU inputs)."""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
from typing import Any, Iterator

# Backend name -> module implementing `compile(graph) -> executable`.
_BACKENDS = {"reference": "stagecraft.backends.reference",
             "numba": "stagecraft.backends.numba_cpu",
             "cuda": "stagecraft.backends.numba_cuda.staged"}
# `function`'s backend when none is given; STAGECRAFT_BACKEND=reference switches a whole
# program (or test run) to the interpreter.
DEFAULT = os.environ.get("STAGECRAFT_BACKEND", "numba")

#: How the Numba backend compiles a new concrete function (``stagecraft.config.
#: set_compile_mode``): "background" runs the first calls on the reference interpreter while
#: a worker process compiles, "sync" compiles before the first call returns, "eager" never
#: compiles (the interpreter runs every call).
COMPILE_MODES = ("background", "sync", "eager")
_compile_mode = [os.environ.get("STAGECRAFT_COMPILE_MODE", "background")]
if _compile_mode[0] not in COMPILE_MODES:
    raise ValueError(f"STAGECRAFT_COMPILE_MODE={_compile_mode[0]!r}: expected one of "
                     f"{', '.join(COMPILE_MODES)}.")


_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("compile_mode",
                                                                      default=None)


def compile_mode() -> str:
    """The current compile mode (see ``COMPILE_MODES``): ``compiling_as``'s inside it, else
    the global one."""
    return _override.get() or _compile_mode[0]


@contextlib.contextmanager
def compiling_as(mode: str | None) -> Iterator[None]:
    """Compiles in ``mode`` inside the block (None: the global mode), e.g. for a
    ``tf.function(jit_compile=True)``, which compiles before its first call returns."""
    token = _override.set(mode)
    try:
        yield
    finally:
        _override.reset(token)


def set_compile_mode(mode: str) -> None:
    """Sets the compile mode for concrete functions compiled from now on."""
    if mode not in COMPILE_MODES:
        raise ValueError(f"compile mode must be one of {', '.join(COMPILE_MODES)}; got "
                         f"{mode!r}.")
    _compile_mode[0] = mode


def get_backend(name: str | None) -> Any:
    """The backend module for ``name`` (None: the default); unknown names raise ValueError."""
    name = DEFAULT if name is None else name
    try:
        return importlib.import_module(_BACKENDS[name])
    except KeyError:
        raise ValueError(f"Unknown backend {name!r}; available: {sorted(_BACKENDS)}.") from None
