"""Backends that compile graph functions (``compile(graph) -> executable``): the Numba CPU
code generator (the default), the reference interpreter, and staged GPU functions (``"cuda"``,
which ``tf.function`` selects for calls under a GPU device scope or with GPU inputs)."""
from __future__ import annotations

import importlib
import os
from typing import Any

# Backend name -> module implementing `compile(graph) -> executable`.
_BACKENDS = {"reference": "stagecraft.backends.reference",
             "numba": "stagecraft.backends.numba_cpu",
             "cuda": "stagecraft.backends.numba_cuda.staged"}
# `function`'s backend when none is given; STAGECRAFT_BACKEND=reference switches a whole
# program (or test run) to the interpreter.
DEFAULT = os.environ.get("STAGECRAFT_BACKEND", "numba")


def get_backend(name: str | None) -> Any:
    """The backend module for ``name`` (None: the default); unknown names raise ValueError."""
    name = DEFAULT if name is None else name
    try:
        return importlib.import_module(_BACKENDS[name])
    except KeyError:
        raise ValueError(f"Unknown backend {name!r}; available: {sorted(_BACKENDS)}.") from None
