"""Stand-ins for attribute values that IR text names but does not contain: a large constant
printed as ``digest(...)`` and a Python callable printed as ``python('qualname')``.

The parser produces them so that a parsed graph prints exactly like the graph it was printed
from; they carry no data (a zero array, a callable that refuses to run).
"""
from __future__ import annotations

from typing import Any

import numpy as np


class DigestArray(np.ndarray):
    """A zero array standing for a constant whose data was printed only as a digest.

    It keeps the printed digest, so it prints the same; arrays derived from it (copies, results
    of arithmetic) lose the digest and print their own.

    >>> a = DigestArray("0123456789abcdef", np.float32, (20,))
    >>> a.digest, a.shape, float(a.sum())
    ('0123456789abcdef', (20,), 0.0)
    >>> (a + 1).digest is None
    True
    """

    digest: str | None

    def __new__(cls, digest: str, dtype: Any, shape: tuple) -> "DigestArray":
        obj = np.zeros(tuple(shape), dtype=dtype).view(cls)
        obj.digest = digest
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.digest = None  # only the array made by __new__ stands for the printed constant


class PythonRef:
    """A placeholder for a Python callable (a ``py_function``'s ``fn``) parsed from IR text.

    It prints as the callable did (``python('qualname')``) but cannot be called.

    >>> f = PythonRef("make.<locals>.run")
    >>> f.__qualname__
    'make.<locals>.run'
    >>> f()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: python('make.<locals>.run') was parsed from IR text: ... cannot be called.
    """

    def __init__(self, qualname: str):
        self.__qualname__ = qualname

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"python({self.__qualname__!r}) was parsed from IR text: the Python "
                        f"callable it names is not available, so it cannot be called.")

    def __repr__(self) -> str:
        return f"PythonRef({self.__qualname__!r})"
