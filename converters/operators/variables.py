"""Placeholders for values that are not defined (yet) in converted code."""
from __future__ import annotations

from typing import Any

# How state names show the generated variable that holds a function's return value.
RETURN_VALUE = "<return value>"


class Undefined:
    """Stands for a local that has no value on some path; using it raises the recorded reason
    (for example that a tensor-dependent ``if`` defined it in only one branch).

    >>> u = Undefined("y", "'y' must also be initialized in the else branch (f.py:3)")
    >>> try:
    ...     u + 1
    ... except UnboundLocalError as e:
    ...     print(e)
    'y' must also be initialized in the else branch (f.py:3)
    """

    __slots__ = ("symbol_name", "reason")

    def __init__(self, symbol_name: str, reason: str | None = None):
        self.symbol_name = symbol_name
        self.reason = reason

    def error(self) -> UnboundLocalError:
        return UnboundLocalError(self.reason or f"local variable '{self.symbol_name}' referenced "
                                                f"before assignment")

    def __repr__(self) -> str:
        return f"Undefined({self.symbol_name!r})"

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error()

    __getattr__ = _fail
    __call__ = __bool__ = __iter__ = __len__ = __index__ = __int__ = __float__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = __setitem__ = _fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _fail


class UndefinedReturnValue:
    """The return value of a converted function before any ``return`` ran."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


def is_undefined(value: Any) -> bool:
    return isinstance(value, Undefined)


def retval(value: Any) -> Any:
    """What a converted function returns: None if no ``return`` ran."""
    return None if isinstance(value, UndefinedReturnValue) else value
