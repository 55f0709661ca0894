"""Backends that compile graph functions (``compile(graph) -> executable``): the reference
interpreter today; Numba CPU and Numba CUDA join the registry with their issues."""
from __future__ import annotations

import importlib
from typing import Any

# Backend name -> module implementing `compile(graph) -> executable`.
_BACKENDS = {"reference": "stagecraft.backends.reference"}
DEFAULT = "reference"


def get_backend(name: str | None) -> Any:
    """The backend module for ``name`` (None: the default); unknown names raise ValueError."""
    name = DEFAULT if name is None else name
    try:
        return importlib.import_module(_BACKENDS[name])
    except KeyError:
        raise ValueError(f"Unknown backend {name!r}; available: {sorted(_BACKENDS)}.") from None
