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


#: Graphs with more equations than this (regions included) run on the Numba backend as a
#: hybrid plan (a Python driver calling one small compiled kernel per op or fused group,
#: deduplicated by structure) instead of one compiled function, whose compile time grows
#: faster than its size (``stagecraft.config.set_hybrid_threshold``;
#: ``STAGECRAFT_HYBRID_THRESHOLD`` sets the initial value). Measured on ResNet-50: see
#: ``stagecraft.backends.numba_cpu.hybrid``.
DEFAULT_HYBRID_THRESHOLD = 300
_threshold_env = os.environ.get("STAGECRAFT_HYBRID_THRESHOLD", str(DEFAULT_HYBRID_THRESHOLD))
if not _threshold_env.strip().isdigit():
    raise ValueError(f"STAGECRAFT_HYBRID_THRESHOLD={_threshold_env!r}: expected a number of "
                     f"equations (an int >= 0), e.g. {DEFAULT_HYBRID_THRESHOLD}.")
_hybrid_threshold = [int(_threshold_env)]


def hybrid_threshold() -> int:
    """The equation count above which the Numba backend compiles a hybrid plan."""
    return _hybrid_threshold[0]


def set_hybrid_threshold(equations: int) -> None:
    """Sets ``hybrid_threshold()`` for graphs compiled from now on."""
    if isinstance(equations, bool) or not isinstance(equations, int) or equations < 0:
        raise ValueError(f"the hybrid threshold must be a number of equations (an int >= 0); "
                         f"got {equations!r}.")
    _hybrid_threshold[0] = equations


def get_backend(name: str | None) -> Any:
    """The backend module for ``name`` (None: the default); unknown names raise ValueError."""
    name = DEFAULT if name is None else name
    try:
        return importlib.import_module(_BACKENDS[name])
    except KeyError:
        raise ValueError(f"Unknown backend {name!r}; available: {sorted(_BACKENDS)}.") from None
