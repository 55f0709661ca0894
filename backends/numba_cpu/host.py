"""Python functions that generated code calls from ``numba.objmode`` blocks: ``print`` and
``py_function``.

A ``py_function``'s callable cannot be baked into cached source, so each executable registers
its callables under an integer token (:func:`register`) that it passes to the compiled function;
the generated code calls ``call_host(token, index, args, specs)``.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.runtime import format_print, write
from stagecraft.ir.errors import InvalidArgumentError

_tokens = itertools.count(1)
_registry: dict[int, tuple] = {}
_lock = threading.Lock()


def register(fns: Sequence[Callable]) -> int:
    """A token under which generated code finds ``fns`` (see :func:`release`)."""
    with _lock:
        token = next(_tokens)
        _registry[token] = tuple(fns)
    return token


def release(token: int) -> None:
    with _lock:
        _registry.pop(token, None)


def host_print(template: tuple, sep: str, summarize: Any, end: str, stream: str,
               values: tuple) -> None:
    write(stream, format_print(template, values, sep, summarize) + end)


def call_host(token: int, index: int, args: tuple, specs: tuple) -> Any:
    """Runs py_function ``index`` of ``token`` and checks its results against the
    (dtype, rank) ``specs`` the compiled code was typed with."""
    results = _registry[token][index](*args)
    out = []
    for r, (dtype, rank) in zip(results, specs):
        a = np.asarray(r, dtype=dtype)  # (ascontiguousarray would make a 0-d result 1-d)
        if a.ndim != rank:
            raise InvalidArgumentError(
                f"py_function: the function returned a value of rank {a.ndim} where the "
                f"staged code expects rank {rank}.")
        out.append(a[()] if rank == 0 else np.ascontiguousarray(a))
    return tuple(out)
